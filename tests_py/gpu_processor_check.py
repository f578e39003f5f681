"""Device check of the Python processor's GPU path (not part of `make test`: it needs a
CUDA GPU, and xgrammar for the comparison). Run from the repository root:

    python tests_py/gpu_processor_check.py [cuda|cpu] [TOKENIZER_DIR]

TOKENIZER_DIR holds the Llama-3 tokenizer.json (default: $TETHER_TOKENIZERS/llama3, or
build/tokenizers/llama3 after `make setup`). What it does:

1. model.generate on the device with tether.JSONSchemaLogitsProcessor: greedy (a batch
   of 4, left padding), sampling (num_return_sequences=3) and beam search (3 beams) with a
   random-weight Llama-shaped model in bf16 and the real Llama-3 tokenizer; every output
   must be JSON that the schema accepts, ended by EOS.
1c. The one-kernel path (tether/_cuda.py reads the pinned bitmask in one kernel) and the
   torch path (TETHER_CUDA_KERNEL=0: copy, unpack, masked_fill) refuse exactly the same
   scores in float32, bfloat16 and float16; on cuda the one-kernel path must be the one
   that ran.
2. Per-step cost of the processor on device scores, against xgrammar's HF processor
   on the same scores: a decode loop of random float32 scores [1, 128256] on the device,
   argmax of the processed scores appended each step (the tokens follow the grammar),
   synchronised before and after each step; baseline = the same loop without a processor.
   Both processors see the same scores, so equal masks give equal token sequences.
   tether is timed on both device paths (tether: one kernel; tether-torchpath).
"""

import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, "python")
import tether  # noqa: E402
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM  # noqa: E402

dev = sys.argv[1] if len(sys.argv) > 1 else "cuda"
tok_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.environ.get("TETHER_TOKENIZERS", "build/tokenizers"), "llama3")
sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
print("device:", torch.cuda.get_device_name(0) if dev == "cuda" else "cpu", "torch", torch.__version__,
      "transformers", __import__("transformers").__version__, flush=True)

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 8},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "ok": {"type": "boolean"},
    },
    "required": ["name", "age", "ok"],
    "additionalProperties": False,
}


def valid(text: str) -> bool:
    try:
        v = json.loads(text)
    except ValueError:
        return False
    return (isinstance(v, dict) and set(v) == {"name", "age", "ok"} and isinstance(v["name"], str)
            and len(v["name"]) <= 8 and type(v["age"]) is int and 0 <= v["age"] <= 120
            and type(v["ok"]) is bool)


tok = AutoTokenizer.from_pretrained(tok_dir)
tok.pad_token = tok.eos_token
tok.padding_side = "left"
eos = tok.eos_token_id
V = len(tok)
torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=V, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                  bos_token_id=tok.bos_token_id, eos_token_id=eos, pad_token_id=eos)
model = LlamaForCausalLM(cfg).to(device=dev, dtype=torch.bfloat16).eval()
proc = tether.JSONSchemaLogitsProcessor(SCHEMA, tok, model=model, whitespace="compact")

# 1. generate on the device, three modes
prompts = ["Describe a person as JSON:", "A user:", "Give me a record", "JSON please:"]
fails = 0
for mode, kw, batch in [
    ("greedy", dict(do_sample=False), prompts),
    ("sampling", dict(do_sample=True, top_k=50, temperature=1.0, num_return_sequences=3), prompts[:2]),
    ("beams", dict(do_sample=False, num_beams=3, num_return_sequences=2), prompts[:2]),
]:
    inputs = tok(batch, return_tensors="pt", padding=True).to(dev)
    with torch.no_grad():
        out = model.generate(**inputs, logits_processor=[proc], max_new_tokens=64, pad_token_id=eos, **kw)
    gen = out[:, inputs["input_ids"].shape[1]:]
    for row in gen.tolist():
        body = [t for t in row if t != eos]
        ended = eos in row
        text = tok.decode(body)
        ok = ended and valid(text)
        fails += not ok
        print(f"  {mode:8s} {'ok ' if ok else 'BAD'} {text!r}", flush=True)
print("generate on", dev, "outputs that fail:", fails, flush=True)

# 1b. the bitmask API with device logits: a batch filled in one call, applied on the device
g1 = tether.Grammar.from_json_schema(SCHEMA, tok, whitespace="compact")
g2 = tether.Grammar(tether.regex_to_gbnf(r"[0-9]{2,5}-[a-z]+"), tok)
m1, m2 = g1.matcher(), g2.matcher()
for t in tok.encode('{"name":"ab', add_special_tokens=False):
    m1.accept_token(t)
mask = tether.allocate_token_bitmask(2, V)
tether.fill_next_token_bitmasks([m1, m2], mask)
logits = torch.randn(2, V, device=dev)
tether.apply_token_bitmask(logits, mask)
api_bad = 0
for row, m in enumerate((m1, m2)):
    got = torch.isfinite(logits[row]).nonzero().flatten().cpu().tolist()
    api_bad += got != m.allowed_token_ids().tolist()
one = torch.randn(V, device=dev)  # one row, 1-D, and a bitmask narrower than the logits
tether.apply_token_bitmask(one, mask[1][: (V - 64) // 32])
want = [t for t in m2.allowed_token_ids().tolist() if t < (V - 64) // 32 * 32]
api_bad += torch.isfinite(one).nonzero().flatten().cpu().tolist() != want
print("bitmask API on", dev, "rows that differ from the matchers' allowed sets:", api_bad, flush=True)
fails += api_bad

# 1c. the one-kernel path (tether/_cuda.py: the pinned bitmask read by one kernel) and
# the torch path (copy, unpack, masked_fill) mask exactly the same scores, per dtype.
import tether.processors as tp  # noqa: E402

kernel_bad = 0
for dtype in (torch.float32, torch.bfloat16, torch.float16):
    outs = {}
    for one in (True, False):
        tp._ONE_KERNEL = one
        p = tether.JSONSchemaLogitsProcessor(SCHEMA, tok, eos_token_id=[eos], whitespace="compact")
        ids = tok(['{"name":"ab', '{"age":1'], return_tensors="pt", padding=True)["input_ids"].to(dev)
        scores = torch.randn(2, V + 64, device=dev, generator=torch.Generator(device=dev).manual_seed(5)).to(dtype)
        outs[one] = torch.isinf(p(ids, scores)).cpu()
    tp._ONE_KERNEL = True
    kernel_bad += not torch.equal(outs[True], outs[False])
    print(f"one-kernel vs torch path, {dtype}: {'same' if torch.equal(outs[True], outs[False]) else 'DIFFERENT'} "
          f"masks ({int(outs[True].sum())} refused)", flush=True)
if dev == "cuda":
    print("one-kernel path:", "used" if tether._cuda.reason() is None else f"unavailable: {tether._cuda.reason()}", flush=True)
else:
    print("one-kernel path: not applicable (scores on the cpu: both rows above are the cpu path)", flush=True)
fails += kernel_bad + (tether._cuda.reason() is not None and dev == "cuda")

# 2. per-step cost on device scores
import xgrammar as xgr  # noqa: E402

info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=V, stop_token_ids=[eos])
compiled = xgr.GrammarCompiler(info).compile_json_schema(json.dumps(SCHEMA), any_whitespace=False, separators=(",", ":"))
tproc = tether.JSONSchemaLogitsProcessor(SCHEMA, tok, eos_token_id=[eos], whitespace="compact")
tproc_in = tether.JSONSchemaLogitsProcessor(SCHEMA, tok, eos_token_id=[eos], whitespace="compact", inplace=True)
prompt = tok(["Describe a person as JSON:"], return_tensors="pt")["input_ids"].to(dev)


def loop(make, seqs=30, steps=80):
    g = torch.Generator(device=dev).manual_seed(1234)
    times, outs = [], []
    for _ in range(seqs):
        p = make()
        if p is tproc or p is tproc_in:
            p.reset()
        ids = prompt.clone()
        toks = []
        for _ in range(steps):
            scores = torch.randn(1, V, generator=g, device=dev)
            sync()
            t0 = time.perf_counter()
            s = p(ids, scores) if p is not None else scores
            nxt = s.argmax(-1)
            sync()
            times.append(time.perf_counter() - t0)
            ids = torch.cat([ids, nxt[:, None]], dim=1)
            t = int(nxt)
            toks.append(t)
            if t == eos:
                break
        outs.append(toks)
    return times, outs


for _ in range(2):  # warm up all three
    loop(lambda: None, seqs=2)
    loop(lambda: tproc, seqs=2)
    loop(lambda: tproc_in, seqs=2)
    loop(lambda: xgr.contrib.hf.LogitsProcessor(compiled), seqs=2)
def torch_path(p):
    tp._ONE_KERNEL = False
    return p


def one_kernel(p):
    tp._ONE_KERNEL = True
    return p


res = {}
for name, make in [("none", lambda: None), ("tether", lambda: one_kernel(tproc)),
                   ("tether-inplace", lambda: one_kernel(tproc_in)),
                   ("tether-torchpath", lambda: torch_path(tproc)),
                   ("xgrammar", lambda: xgr.contrib.hf.LogitsProcessor(compiled)),
                   ("none2", lambda: None)]:
    res[name] = loop(make)
base = statistics.median(res["none"][0] + res["none2"][0])
tp._ONE_KERNEL = True
for name in ("tether", "tether-inplace", "tether-torchpath", "xgrammar"):
    t = sorted(res[name][0])
    med, p90 = statistics.median(t), t[int(0.9 * (len(t) - 1))]
    outs = res[name][1]
    good = sum(1 for o in outs if o and o[-1] == eos and valid(tok.decode(o[:-1])))
    print(f"{name:14s} steps {len(t):5d}  step p50 {med * 1e6:8.1f} us  p90 {p90 * 1e6:8.1f} us  "
          f"over the no-processor step (p50 {base * 1e6:.1f} us): {(med - base) * 1e6:8.1f} us; "
          f"valid ended outputs {good}/{len(outs)}", flush=True)
same = sum(a == b for a, b in zip(res["tether"][1], res["xgrammar"][1]))
print(f"token sequences identical between tether and xgrammar: {same}/{len(res['tether'][1])}")
print("tether/xgrammar step p50 ratio: %.2fx" % (
    (statistics.median(res["tether"][0]) - base) / max(statistics.median(res["xgrammar"][0]) - base, 1e-9)))
bad = fails + sum(1 for name in ("tether", "tether-inplace") for o in res[name][1]
                  if not (o and o[-1] == eos and valid(tok.decode(o[:-1]))))
sys.exit(1 if bad else 0)
