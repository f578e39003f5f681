"""llama.cpp's sampler chain from Python: tether.SamplerChain, tether.SamplingLogitsProcessor.

Parity: for the same logits rows and seed, the Python processor (as generate calls it),
SamplerChain (gocore/sampling through the extension) and `tether generate --logits`
(the CLI) pick identical tokens over 1,000 steps, for every sampler. And a transformers
``generate`` with the tether chain as its last processor produces the same tokens as
``tether generate`` on the same safetensors.

The CLI is ROOT/build/bin/tether (`make build`; `make test` builds it first).
"""

from __future__ import annotations

import json
import re
import math
import subprocess
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from conftest import ROOT, tokenizer_path
from transformers import PreTrainedTokenizerFast

import tether

TETHER = ROOT / "build" / "bin" / "tether"
STEPS = 1000
VOCAB = 256
SEED = 1234
PROMPT = [5, 9, 5, 9, 17, 198, 25]

# llama.cpp's flag for each parameter name (tether generate uses the same).
FLAGS = {
    "temp": "temp", "top_k": "top-k", "top_p": "top-p", "min_p": "min-p", "typ_p": "typical",
    "top_n_sigma": "top-nsigma", "xtc_probability": "xtc-probability", "xtc_threshold": "xtc-threshold",
    "penalty_last_n": "repeat-last-n", "penalty_repeat": "repeat-penalty", "penalty_freq": "frequency-penalty",
    "penalty_present": "presence-penalty", "dry_multiplier": "dry-multiplier", "dry_base": "dry-base",
    "dry_allowed_length": "dry-allowed-length", "dry_penalty_last_n": "dry-penalty-last-n",
    "dynatemp_range": "dynatemp-range", "dynatemp_exponent": "dynatemp-exp", "mirostat": "mirostat",
    "mirostat_tau": "mirostat-ent", "mirostat_eta": "mirostat-lr", "min_keep": "min-keep",
    "samplers": "samplers",
}  # fmt: skip

# One configuration per sampler (plus the default chain); "dry" needs the tokenizer
# to turn the default sequence breakers into token ids.
CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "greedy": {"temp": 0.0},
    "dist": {"top_k": 0, "top_p": 1.0, "min_p": 0.0, "temp": 1.0},
    "temperature": {"samplers": "temperature", "temp": 0.7},
    "dynatemp": {"samplers": "top_k;temperature", "top_k": 20, "temp": 0.9, "dynatemp_range": 0.5, "dynatemp_exponent": 1.5},
    "top_k": {"samplers": "top_k;temperature", "top_k": 5, "temp": 1.0},
    "top_p": {"samplers": "top_p;temperature", "top_p": 0.8, "temp": 1.0},
    "min_p": {"samplers": "min_p;temperature", "min_p": 0.1, "temp": 1.0},
    "typ_p": {"samplers": "typ_p;temperature", "typ_p": 0.9, "temp": 1.0},
    "xtc": {"samplers": "top_k;xtc;temperature", "top_k": 30, "xtc_probability": 0.5, "xtc_threshold": 0.05, "temp": 1.0},
    "top_n_sigma": {"samplers": "top_n_sigma;temperature", "top_n_sigma": 1.0, "temp": 1.0},
    "min_keep": {"samplers": "top_p;min_p;temperature", "top_p": 0.3, "min_p": 0.5, "min_keep": 5, "temp": 1.0},
    "penalties": {"samplers": "penalties;top_k;temperature", "top_k": 8, "penalty_last_n": 32, "penalty_repeat": 1.3,
                  "penalty_freq": 0.2, "penalty_present": 0.3, "temp": 1.0},
    "dry": {"samplers": "dry;top_k;temperature", "top_k": 6, "dry_multiplier": 0.8, "dry_base": 1.75,
            "dry_allowed_length": 2, "dry_penalty_last_n": 64, "temp": 1.0},
    "mirostat1": {"mirostat": 1, "mirostat_tau": 4.0, "mirostat_eta": 0.1, "temp": 1.0},
    "mirostat2": {"mirostat": 2, "mirostat_tau": 3.0, "mirostat_eta": 0.2, "temp": 1.0},
    "logit_bias": {"samplers": "top_k;temperature", "top_k": 10, "logit_bias": {3: 5.0, 7: -math.inf}, "temp": 1.0},
}  # fmt: skip


def run_tether(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    if not TETHER.exists():
        pytest.fail(f"{TETHER} missing: run `make build`")
    proc = subprocess.run([str(TETHER), *args], capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, f"tether {args[0]} failed ({proc.returncode}):\n{proc.stderr}"
    return proc


def cli_flags(cfg: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for k, v in cfg.items():
        if k == "logit_bias":
            for t, b in v.items():
                out += ["--logit-bias", f"{t}{'-inf' if b == -math.inf else f'{b:+g}'}"]
            continue
        out += [f"--{FLAGS[k]}", str(v)]
    return out


@pytest.fixture(scope="module")
def llama3_tok() -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_path("llama3")))


def logits_rows(name: str) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    # Peaked rows, so that tokens repeat and penalties and DRY have work to do.
    return (rng.standard_normal((STEPS, VOCAB)) * 2.5).astype(np.float32)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_processor_chain_and_cli_pick_the_same_tokens(name: str, tmp_path: Path, llama3_tok: Any) -> None:
    cfg = CONFIGS[name]
    rows = logits_rows(name)
    tok = llama3_tok if name == "dry" else None

    chain = tether.SamplerChain(seed=SEED, tokenizer=tok, **cfg)
    chain.accept_prompt(PROMPT)
    by_chain = []
    for row in rows:
        t = chain.sample(row)
        chain.accept(t)
        by_chain.append(t)

    proc = tether.SamplingLogitsProcessor(seed=SEED, tokenizer=tok, **cfg)
    ids = torch.tensor([PROMPT], dtype=torch.long)
    by_proc = []
    for row in rows:
        out = proc(ids, torch.from_numpy(row).unsqueeze(0))
        assert int(torch.isfinite(out).sum()) == 1, "exactly one token keeps a finite score"
        t = int(out.argmax())
        by_proc.append(t)
        ids = torch.cat([ids, torch.tensor([[t]])], dim=1)

    f = tmp_path / "logits.f32"
    rows.astype("<f4").tofile(f)
    args = ["generate", "--logits", str(f), "--n-vocab", str(VOCAB), "--seed", str(SEED),
            "--prompt-ids", ",".join(map(str, PROMPT)), *cli_flags(cfg)]  # fmt: skip
    if tok is not None:
        args += ["--tokenizer", str(tokenizer_path("llama3"))]
    by_cli = json.loads(run_tether(*args).stdout)["ids"]

    assert len(by_chain) == STEPS
    assert by_proc == by_chain, f"{name}: processor and SamplerChain differ"
    assert by_cli == by_chain, f"{name}: tether generate and SamplerChain differ"
    if name != "greedy":
        assert len(set(by_chain)) > 3, f"{name}: degenerate picks {set(by_chain)}"
    if name == "logit_bias":
        assert 7 not in by_chain and by_chain.count(3) > STEPS // 10


def test_sampler_options_change_the_picks() -> None:
    """The parity above would hold for a chain that ignored its parameters: check
    that each sampler does change what is picked on the same rows."""
    rows = logits_rows("default")[:200]

    def picks(**cfg: Any) -> list[int]:
        c = tether.SamplerChain(**{"seed": SEED, **cfg})
        out = []
        for r in rows:
            t = c.sample(r)
            c.accept(t)
            out.append(t)
        return out

    base = picks(samplers="temperature", temp=1.0)
    assert picks(samplers="temperature", temp=1.0) == base, "same seed, same picks"
    assert picks(samplers="temperature", temp=1.0, seed=SEED + 1) != base
    for cfg in (
        {"samplers": "top_k;temperature", "top_k": 3},
        {"samplers": "top_p;temperature", "top_p": 0.5},
        {"samplers": "min_p;temperature", "min_p": 0.3},
        {"samplers": "penalties;temperature", "penalty_repeat": 2.0},
        {"samplers": "xtc;temperature", "xtc_probability": 1.0, "xtc_threshold": 0.05},
        {"mirostat": 2},
    ):
        assert picks(temp=1.0, **cfg) != base, cfg


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"top_p": 1.5}, "top_p"),
        ({"top_k": -1}, "top_k"),
        ({"temp": float("nan")}, "temp"),
        ({"mirostat": 3}, "mirostat"),
        ({"samplers": "top_k;nonsense"}, "samplers"),
        ({"penalty_last_n": -2}, "penalty_last_n"),
        ({"dry_allowed_length": "two"}, "dry_allowed_length"),
        ({"no_such_knob": 1}, "no_such_knob"),
        ({"logit_bias": {5: math.inf}}, "logit_bias"),
        ({"seed": -5}, "seed"),
    ],
)
def test_param_error_names_the_parameter(kwargs: dict[str, Any], param: str) -> None:
    for cls in (tether.SamplerChain, tether.SamplingLogitsProcessor):
        with pytest.raises(tether.ParamError) as ei:
            cls(**kwargs)
        assert ei.value.param == param, str(ei.value)
        assert param in str(ei.value)
        assert isinstance(ei.value, ValueError)


def test_llama_cpp_spellings_and_description() -> None:
    c = tether.SamplerChain(
        "top_k;top_p;temperature", seed=1, temperature=0.5, repeat_penalty=1.1, frequency_penalty=0.1,
        presence_penalty=0.2, repeat_last_n=16, typical_p=1.0,
    )  # fmt: skip
    assert c.describe() == "logits -> logit-bias -> top-k -> top-p -> temp-ext -> dist"
    assert tether.SamplerChain("edskypmxt", seed=1).describe().startswith("logits -> logit-bias -> penalties -> dry")
    w = tether.SamplerChain("top_p;penalties", seed=1).warnings
    assert any("penalties" in x for x in w), w


def test_grammar_aware_sampling(llama3_tok: Any) -> None:
    """With grammar=, the chain samples, checks the pick and resamples only when the
    grammar refuses it: every pick obeys the grammar even from logits that favour
    other tokens."""
    g = tether.GrammarLogitsProcessor('root ::= "yes" | "no" | "maybe"', llama3_tok)
    chain = tether.SamplerChain(seed=3, grammar=g, temp=1.0)
    rng = np.random.default_rng(0)
    text = b""
    for _ in range(5):
        t = chain.sample(rng.standard_normal(len(llama3_tok)).astype(np.float32) * 3)
        chain.accept(t)
        if t in g.vocab.eog_token_ids:
            break
        text += llama3_tok.decode([t]).encode()
    assert text in (b"yes", b"no", b"maybe"), text

    with pytest.raises(tether.GrammarError):
        tether.SamplerChain(seed=3, grammar=g).accept(llama3_tok.convert_tokens_to_ids("hello"))

    # As a processor: the chain alone enforces the grammar inside generate.
    proc = tether.SamplingLogitsProcessor(seed=4, grammar=g, temp=1.0)
    ids = torch.tensor([[1, 2, 3]])
    for _ in range(4):
        out = proc(ids, torch.from_numpy(rng.standard_normal((1, len(llama3_tok))).astype(np.float32) * 3))
        t = int(out.argmax())
        if t in g.vocab.eog_token_ids:
            break
        ids = torch.cat([ids, torch.tensor([[t]])], dim=1)
    assert llama3_tok.decode(ids[0, 3:].tolist()) in ("yes", "no", "maybe")


def test_lazy_triggers_from_python(llama3_tok: Any) -> None:
    """Triggers(patterns_full=..., preserved_tokens=...) reach the engine with llama.cpp's
    semantics: PATTERN_FULL must match the whole output."""
    grammar = 'root ::= "{" [a-z]* "}"'
    m = tether.Grammar(
        tether.Vocabulary.from_hf(llama3_tok), grammar, triggers=tether.Triggers(patterns_full=[r"\{a"])
    ).matcher()
    m.accept_text("{abc")
    assert m.allowed_token_ids().size == len(llama3_tok), r"\{a must not fire on {abc"
    m = tether.Grammar(
        tether.Vocabulary.from_hf(llama3_tok), grammar, triggers=tether.Triggers(patterns_full=[r"(X)?CALL:\s*(\{)[\s\S]*"])
    ).matcher()
    m.accept_text("CALL: {ab")
    assert not m.accepts("x{"), "the grammar took over at the first non-empty group"
    assert m.accepts("c}")
    with pytest.raises(tether.GrammarError, match="preserved token"):
        tether.Grammar(
            tether.Vocabulary.from_hf(llama3_tok), grammar,
            triggers=tether.Triggers(words=["x"], preserved_tokens=["<|not_a_token|>"]),
        )  # fmt: skip
    hdr = llama3_tok.convert_tokens_to_ids("<|start_header_id|>")
    g = tether.Grammar(
        tether.Vocabulary.from_hf(llama3_tok), 'root ::= "call<|start_header_id|>" [a-z]*',
        triggers=tether.Triggers(words=["call<|start_header_id|>"], preserved_tokens=["<|start_header_id|>"]),
    )  # fmt: skip
    m = g.matcher()
    m.accept_text("so call")
    m.accept_token(hdr)  # the word spans the special token's text: replayed as text
    assert m.accepts("abc")
    assert not m.accepts("1")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    from test_model_parity import SPECS, build_model

    spec = next(s for s in SPECS if s.name == "llama3-rope-f32")  # Llama-3 tokenizer, llama3 RoPE, f32
    return spec, build_model(spec, tmp_path_factory.mktemp("sampling-model"))


@pytest.mark.parametrize(
    "cfg",
    [
        {"seed": 3, "temp": 0.9},
        # top_k keeps the draw among a few dozen tokens: over the whole 128k vocabulary of a
        # random model the distribution is nearly flat, and the 1e-4 logit differences
        # between Go and PyTorch would move the cumulative sum the draw lands in.
        {"seed": 5, "temp": 1.2, "top_k": 30, "top_p": 0.9, "min_p": 0.0, "penalty_repeat": 1.2, "penalty_last_n": 16,
         "dry_multiplier": 0.8, "xtc_probability": 0.3},
        {"seed": 8, "mirostat": 2, "temp": 1.0},
        {"seed": 9, "temp": 0.8, "do_sample": True},
    ],
    ids=["default-chain", "penalties-dry-xtc", "mirostat2", "do_sample"],
)  # fmt: skip
def test_transformers_generate_matches_go_generate(tiny_model: tuple[Any, Path], cfg: dict[str, Any]) -> None:
    from test_model_parity import PROMPT as TEXT
    from test_model_parity import load

    spec, d = tiny_model
    n = 24
    seed = cfg["seed"]
    do_sample = cfg.get("do_sample", False)  # generate's own sampling must take the one finite token
    params = {k: v for k, v in cfg.items() if k not in ("seed", "do_sample")}
    proc = run_tether(
        "generate", "--model", str(d), "--prompt", TEXT, "--max-tokens", str(n), "--ignore-eog", "--json",
        "--seed", str(seed), *cli_flags(params),
    )  # fmt: skip
    got = json.loads(proc.stdout)
    tok = PreTrainedTokenizerFast(tokenizer_file=str(d / "tokenizer.json"))
    model = load(d, spec, torch.float32)
    max_pos = json.loads((d / "config.json").read_text())["max_position_embeddings"]
    sampler = tether.SamplingLogitsProcessor(seed=seed, tokenizer=tok, n_ctx=max_pos, **params)
    with torch.no_grad():
        out = model.generate(
            torch.tensor([got["prompt_ids"]]),
            do_sample=do_sample,
            max_new_tokens=n,
            suppress_tokens=got["eog_ids"],
            pad_token_id=got["eog_ids"][0],
            logits_processor=[sampler],
        )
    want = out[0, len(got["prompt_ids"]) :].tolist()
    assert got["ids"] == want, f"{cfg}: Go generate and transformers+tether differ"
    assert len(set(want)) > 3, want
    # Go's JSON shows each byte of a partial UTF-8 character as U+FFFD; compare the rest.
    assert got["text"].replace("\ufffd", "") == tok.decode(want).replace("\ufffd", "")


def test_processor_rows_follow_their_tokens() -> None:
    """Each row of a batch has its own chain (rows after the first use seed + row), found
    by the tokens the row holds: swapping rows between steps (as beam search does)
    keeps each history with its tokens."""
    rng = np.random.default_rng(11)
    rows = (rng.standard_normal((40, 2, VOCAB)) * 2.0).astype(np.float32)
    cfg = {"samplers": "penalties;top_k;temperature", "top_k": 8, "penalty_repeat": 1.5, "temp": 1.0}
    prompts = [[1, 2, 3], [4, 5, 6]]
    chains = [tether.SamplerChain(seed=SEED + r, **cfg) for r in range(2)]
    for c, p in zip(chains, prompts):
        c.accept_prompt(p)
    proc = tether.SamplingLogitsProcessor(seed=SEED, **cfg)
    ids = torch.tensor(prompts)
    order = [0, 1]  # which chain's sequence each row holds
    for step, pair in enumerate(rows):
        if step % 3 == 2:  # reorder the rows, as beam search does
            ids = ids.flip(0)
            order.reverse()
        scores = torch.from_numpy(np.stack([pair[order[0]], pair[order[1]]]))
        out = proc(ids, scores)
        picked = out.argmax(dim=1)
        for r in range(2):
            want = chains[order[r]].sample(pair[order[r]])
            chains[order[r]].accept(want)
            assert int(picked[r]) == want, f"step {step}, row {r}"
        ids = torch.cat([ids, picked.unsqueeze(1)], dim=1)


def test_cli_lazy_grammar_root_and_trigger_token(tiny_model: tuple[Any, Path], tmp_path: Path) -> None:
    """tether generate with --root and a lazy grammar woken by --grammar-trigger-token:
    a logit bias makes the model pick the trigger first; from then on the grammar
    (rule "main") holds, and the output ends when it must."""
    _, d = tiny_model
    tok = PreTrainedTokenizerFast(tokenizer_file=str(d / "tokenizer.json"))
    yes = tok.convert_tokens_to_ids("Ġyes")
    g = tmp_path / "g.gbnf"
    g.write_text('main ::= " yes" [ a-z]{0,30}\nother ::= "x"\n')
    proc = run_tether(
        "generate", "--model", str(d), "--prompt", "Answer:", "--grammar", str(g), "--root", "main",
        "--grammar-trigger-token", "Ġyes", "--logit-bias", f"{yes}+40", "--seed", "1", "--max-tokens", "60", "--json",
    )  # fmt: skip
    got = json.loads(proc.stdout)
    assert got["ids"][0] == yes
    assert got["stop"] == "eog", got
    assert re.fullmatch(r" yes[ a-z]{0,30}", got["text"]), got["text"]
    bad = subprocess.run(
        [str(TETHER), "generate", "--model", str(d), "--prompt", "x", "--grammar", str(g),
         "--grammar-trigger-token", "<|no_such_token|>"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert bad.returncode == 2 and "<|no_such_token|>" in bad.stderr, bad.stderr
