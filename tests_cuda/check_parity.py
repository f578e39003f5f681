"""Correctness of tether's CUDA engine on the GPU: logits parity, greedy identity, schemas.

    python check_parity.py MODELS_DIR [--prompt-tokens 128] [--greedy-tokens 64]

MODELS_DIR is make_models.py's output. One PASS/FAIL line per check; exit status 0 only
if all passed. The checks:

parity-torch-NAME   `tether logits --device cuda` against PyTorch on the same GPU, every
                    position of a 128-token prompt (BOS + text), whole vocabulary.
                    Metric: rel = max|tether - torch| / max|torch| over all positions and
                    logits. PyTorch runs with TF32 off (torch.backends.cuda.matmul.allow_tf32
                    = False, cudnn.allow_tf32 = False, float32 matmul precision "highest")
                    and eager attention, so its f32 is f32.
                    f32 models: rel <= 1e-4.
                    bf16 models: two references, PyTorch in bf16 and PyTorch in f32 on the
                    same weights widened. Let ref = rel(PyTorch bf16, PyTorch f32): the size
                    of bf16 rounding for this model and prompt (8 significant bits, each
                    product and stored activation rounded). A correct bf16 engine that rounds
                    at other points than PyTorch differs from either reference by about as
                    much (independent rounding errors add like sqrt(2) x ref); a real error
                    (a wrong RoPE, a misplaced head, a missing norm weight) is O(1). Bound:
                    rel to each reference <= 2 x ref.
parity-cpu-NAME     f32 models: `--device cuda` against `--device cpu` (the CPU engine),
                    same metric, rel <= 1e-4.
greedy-NAME         f32 models: `generate --temp 0 --repeat-penalty 1.5 --ignore-eog
                    --max-tokens 64` with --device cuda and --device cpu give the same 64
                    ids (and not a degenerate repetition: more than 3 distinct ids). The
                    penalty keeps a random-weight model from repeating one token (without
                    it the SmolLM shape gave 3 distinct ids on the GPU machine); the pick
                    stays the argmax of the penalized logits, so it is still greedy.
schema-NAME-S       a JSON-Schema-constrained `generate --device cuda` for schema S, greedy
                    and sampled (--temp 1 with seeds): every output must end with the grammar
                    complete (stop "eog"), parse as JSON and validate against the schema
                    (the small validator below, and the jsonschema package too when it is
                    importable; its absence does not skip the check).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from harness import (
    DRY_RUN,
    TAG,
    Checks,
    banner,
    generate_json,
    manifest,
    prompt_for,
    quiet_transformers,
    read_logits,
    rel_diff,
    tether,
)

F32_BOUND = 1e-4
BF16_FACTOR = 2.0

SCHEMAS = {
    "person": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 12},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
        },
        "required": ["name", "age", "tags"],
        "additionalProperties": False,
    },
    "record": {
        "type": "object",
        "properties": {
            "id": {"type": "string", "pattern": "^[a-z]{2,6}-[0-9]{1,3}$"},
            "ok": {"type": "boolean"},
            "kind": {"enum": ["x", "y", None]},
            "v": {"anyOf": [{"type": "integer", "minimum": -5, "maximum": 9}, {"const": "none"}]},
        },
        "required": ["id", "ok", "kind", "v"],
        "additionalProperties": False,
    },
    "list": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "k": {"type": "string", "minLength": 1, "maxLength": 6},
                "n": {"type": "integer", "minimum": 0, "maximum": 999},
            },
            "required": ["k", "n"],
            "additionalProperties": False,
        },
        "minItems": 1,
        "maxItems": 3,
    },
}


# ---- a small JSON Schema validator for the keywords SCHEMAS use ----------------------
def _is_type(v: object, t: str) -> bool:
    if t == "integer":
        return (isinstance(v, int) and not isinstance(v, bool)) or (
            isinstance(v, float) and v.is_integer()
        )
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "null":
        return v is None
    py = {"string": str, "boolean": bool, "object": dict, "array": list}.get(t)
    if py is None:
        raise ValueError(f"validator: unknown type {t!r}")
    return isinstance(v, py)


def _eq(a: object, b: object) -> bool:  # JSON equality: 1 == 1.0, but True != 1
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def validate(v: object, s: dict, path: str = "$") -> list[str]:
    """Errors (empty: valid) for instance v against schema s; unknown keywords are refused."""
    known = {
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "anyOf",
    }
    unknown = set(s) - known
    if unknown:
        return [f"{path}: validator does not know {sorted(unknown)}"]
    errs: list[str] = []
    if "type" in s:
        types = s["type"] if isinstance(s["type"], list) else [s["type"]]
        if not any(_is_type(v, t) for t in types):
            return [f"{path}: {json.dumps(v)[:40]} is not of type {s['type']}"]
    if "enum" in s and not any(_eq(v, e) for e in s["enum"]):
        errs.append(f"{path}: {json.dumps(v)[:40]} not in enum")
    if "const" in s and not _eq(v, s["const"]):
        errs.append(f"{path}: {json.dumps(v)[:40]} != const")
    if "anyOf" in s and not any(not validate(v, sub, path) for sub in s["anyOf"]):
        errs.append(f"{path}: matches no anyOf branch")
    if isinstance(v, dict):
        props = s.get("properties", {})
        for k in s.get("required", []):
            if k not in v:
                errs.append(f"{path}: missing required {k!r}")
        for k, x in v.items():
            if k in props:
                errs += validate(x, props[k], f"{path}.{k}")
            elif s.get("additionalProperties", True) is False:
                errs.append(f"{path}: additional property {k!r}")
    if isinstance(v, list):
        if len(v) < s.get("minItems", 0) or len(v) > s.get("maxItems", len(v)):
            errs.append(
                f"{path}: {len(v)} items outside [{s.get('minItems', 0)}, {s.get('maxItems', 'inf')}]"
            )
        if "items" in s:
            for i, x in enumerate(v):
                errs += validate(x, s["items"], f"{path}[{i}]")
    if isinstance(v, str):
        if len(v) < s.get("minLength", 0) or len(v) > s.get("maxLength", len(v)):
            errs.append(
                f"{path}: length {len(v)} outside [{s.get('minLength', 0)}, {s.get('maxLength', 'inf')}]"
            )
        if "pattern" in s and not re.search(s["pattern"], v):
            errs.append(f"{path}: {v!r} does not match {s['pattern']}")
    if _is_type(v, "number"):
        if "minimum" in s and v < s["minimum"]:
            errs.append(f"{path}: {v} < minimum {s['minimum']}")
        if "maximum" in s and v > s["maximum"]:
            errs.append(f"{path}: {v} > maximum {s['maximum']}")
    return errs


def validator_selftest() -> list[str]:
    """The validator must accept these and refuse those; otherwise it proves nothing."""
    good = {
        "person": [
            {"name": "ab", "age": 3, "tags": []},
            {"name": "", "age": 150.0, "tags": ["a", "c"]},
        ],
        "record": [
            {"id": "ab-1", "ok": True, "kind": None, "v": -5},
            {"id": "abcdef-999", "ok": False, "kind": "y", "v": "none"},
        ],
        "list": [[{"k": "a", "n": 0}], [{"k": "abcdef", "n": 999}] * 3],
    }
    bad = {
        "person": [
            {"name": "ab", "age": 3},
            {"name": "a" * 13, "age": 3, "tags": []},
            {"name": "a", "age": -1, "tags": []},
            {"name": "a", "age": 1.5, "tags": []},
            {"name": "a", "age": 1, "tags": ["d"]},
            {"name": "a", "age": True, "tags": []},
            {"name": "a", "age": 1, "tags": [], "x": 1},
            {"name": "a", "age": 1, "tags": ["a"] * 4},
            [],
        ],
        "record": [
            {"id": "a-1", "ok": True, "kind": None, "v": 0},
            {"id": "ab-1", "ok": 1, "kind": None, "v": 0},
            {"id": "ab-1", "ok": True, "kind": "z", "v": 0},
            {"id": "ab-1", "ok": True, "kind": "x", "v": 10},
            {"id": "ab-1", "ok": True, "kind": "x", "v": "None"},
            {"id": "ab-1234", "ok": True, "kind": "x", "v": 1},
        ],
        "list": [
            [],
            [{"k": "", "n": 1}],
            [{"k": "a", "n": 1000}],
            [{"k": "a"}],
            [{"k": "a", "n": 1}] * 4,
        ],
    }
    errs = []
    for name, xs in good.items():
        errs += [f"refused valid {name} {x}" for x in xs if validate(x, SCHEMAS[name])]
    for name, xs in bad.items():
        errs += [f"accepted invalid {name} {x}" for x in xs if not validate(x, SCHEMAS[name])]
    return errs


def jsonschema_errors(v: object, s: dict) -> list[str] | None:
    """jsonschema's verdict, or None when the package is not importable."""
    try:
        import jsonschema
    except ImportError:
        return None
    return [e.message for e in jsonschema.Draft202012Validator(s).iter_errors(v)]


# ---- PyTorch references ---------------------------------------------------------------
def torch_logits(model_dir: Path, ids: list[int], dtype_name: str, device: str):
    import torch
    import transformers

    dtype = torch.float32 if dtype_name == "f32" else torch.bfloat16
    model = transformers.LlamaForCausalLM.from_pretrained(
        model_dir, dtype=dtype, attn_implementation="eager"
    )
    model = model.to(device).eval()
    with torch.inference_mode():
        out = model(torch.tensor([ids], device=device)).logits[0].float().cpu().numpy()
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return out



def tether_logits(d: Path, ids: list[int], vocab: int, out: Path, device: str) -> np.ndarray:
    """Every position's logits of `tether logits` on the device, [len(ids), vocab] (the
    file, up to 65 MB for the 1B shape, is removed once read)."""
    tether("logits", "--model", str(d), "--ids", ",".join(map(str, ids)), "--out", str(out), device=device)
    try:
        return read_logits(out, len(ids), vocab)
    finally:
        out.unlink()

def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("models", type=Path)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--greedy-tokens", type=int, default=64)
    ap.add_argument(
        "--only", help="comma-separated model names (default: every model with the role)"
    )
    args = ap.parse_args()
    checks = Checks()
    print(f"== check_parity.py: {banner()}", flush=True)
    if DRY_RUN:
        print(
            "dry run: '--device cuda' and '--device cpu' both run the CPU binary's CPU engine here",
            flush=True,
        )

    import numpy as np
    import torch

    quiet_transformers()
    device = "cpu" if DRY_RUN else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        checks.fail("torch-cuda", "torch.cuda.is_available() is False")
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    if DRY_RUN:
        torch.set_num_threads(2)
    print(
        f"torch {torch.__version__} on {device}"
        f"{' (' + torch.cuda.get_device_name(0) + ')' if device == 'cuda' else ''}; "
        f"TF32 matmul {torch.backends.cuda.matmul.allow_tf32}, cudnn TF32 {torch.backends.cudnn.allow_tf32}, "
        f"fp32 precision {torch.get_float32_matmul_precision()!r}; PyTorch attention: eager",
        flush=True,
    )

    models = manifest(args.models)
    only = set(args.only.split(",")) if args.only else None
    sel = {n: m for n, m in models.items() if only is None or n in only}
    scratch = Path(tempfile.mkdtemp(prefix="parity-", dir=args.models))

    # (i) and (ii): logits parity
    for name, m in sel.items():
        if "parity" not in m["roles"]:
            continue
        d = Path(m["dir"])
        what = f"{m['shape']} {m['dtype']}"
        try:
            _, ids = prompt_for(d, args.prompt_tokens)
            vocab = m["vocab_size"]
            got = tether_logits(d, ids, vocab, scratch / f"{name}.cuda.f32", "cuda")
            ref32 = torch_logits(d, ids, "f32", device)
            r32 = rel_diff(got, ref32)
            scale = float(np.abs(ref32).max())
            if m["dtype"] == "f32":
                checks.report(
                    f"parity-torch-{name}",
                    r32 <= F32_BOUND and scale > 0.5,
                    f"{what}, {len(ids)} positions x {vocab}: max|tether-torch|/max|torch| = {r32:.3g} "
                    f"(bound {F32_BOUND:g}; max|torch| {scale:.3g}, must be > 0.5)",
                )
            else:
                ref16 = torch_logits(d, ids, "bf16", device)
                r16 = rel_diff(got, ref16)
                ref = rel_diff(ref16, ref32)
                bound = BF16_FACTOR * ref
                checks.report(
                    f"parity-torch-{name}",
                    r16 <= bound and r32 <= bound and scale > 0.5 and ref > 0,
                    f"{what}, {len(ids)} positions x {vocab}: rel to torch bf16 {r16:.3g}, rel to torch f32 "
                    f"(widened weights) {r32:.3g}; torch's own bf16-vs-f32 rel {ref:.3g}, bound "
                    f"{BF16_FACTOR:g} x that = {bound:.3g} (rel = max|a-b|/max|b|; max|torch| {scale:.3g})",
                )
            if m["dtype"] == "f32":
                cpu = tether_logits(d, ids, vocab, scratch / f"{name}.cpu.f32", "cpu")
                rc = rel_diff(got, cpu)
                checks.report(
                    f"parity-cpu-{name}",
                    rc <= F32_BOUND,
                    f"{what}: max|cuda-cpu|/max|cpu| = {rc:.3g} (bound {F32_BOUND:g}; CPU engine vs torch "
                    f"{rel_diff(cpu, ref32):.3g})",
                )
        except Exception as e:  # noqa: BLE001 - a failed check, with the reason
            checks.fail(f"parity-{name}", f"{type(e).__name__}: {e}")

    # (iii) greedy identity, f32
    for name, m in sel.items():
        if "greedy" not in m["roles"] or m["dtype"] != "f32":
            continue
        d = Path(m["dir"])
        try:
            text, ids = prompt_for(d, 32)
            flags = (
                "--temp",
                "0",
                "--repeat-penalty",
                "1.5",
                "--ignore-eog",
                "--max-tokens",
                str(args.greedy_tokens),
                "--seed",
                "1",
            )
            a = generate_json(d, text, *flags, device="cuda")
            b = generate_json(d, text, *flags, device="cpu")
            detail = (
                f"{m['shape']} f32, {len(a['prompt_ids'])}-token prompt, {len(a['ids'])} greedy ids; "
                f"{len(set(b['ids']))} distinct"
            )
            if a["prompt_ids"] != ids:
                checks.fail(
                    f"greedy-{name}",
                    f"tether's prompt ids differ from the tokenizers package's: "
                    f"{a['prompt_ids'][:8]}... vs {ids[:8]}...",
                )
            elif (
                a["ids"] == b["ids"]
                and len(b["ids"]) == args.greedy_tokens
                and len(set(b["ids"])) > 3
            ):
                checks.report(
                    f"greedy-{name}",
                    True,
                    detail + f"; cuda == cpu, decode {a['decode_tok_s']:.0f} tok/s "
                    f"(cuda) vs {b['decode_tok_s']:.0f} (cpu)",
                )
            else:
                k = next(
                    (i for i, (x, y) in enumerate(zip(a["ids"], b["ids"])) if x != y),
                    min(len(a["ids"]), len(b["ids"])),
                )
                why = detail + f"; first difference at step {k}"
                if k < min(len(a["ids"]), len(b["ids"])):
                    gap_out = scratch / f"{name}.gap.f32"
                    pre = a["prompt_ids"] + b["ids"][:k]
                    tether(
                        "logits",
                        "--model",
                        str(d),
                        "--ids",
                        ",".join(map(str, pre)),
                        "--out",
                        str(gap_out),
                        device="cpu",
                    )
                    row = read_logits(gap_out, len(pre), m["vocab_size"])[-1]
                    top = np.sort(row)[-2:]
                    why += (
                        f": cuda picked {a['ids'][k]}, cpu {b['ids'][k]}; the CPU's top-2 logit gap there is "
                        f"{top[1] - top[0]:.3g} (max logit {top[1]:.3g})"
                    )
                elif len(set(b["ids"])) <= 3:
                    why += "; degenerate run (<= 3 distinct ids proves little)"
                checks.fail(f"greedy-{name}", why)
        except Exception as e:  # noqa: BLE001
            checks.fail(f"greedy-{name}", f"{type(e).__name__}: {e}")

    # (iv) JSON-schema-constrained generation
    st = validator_selftest()
    have_js = jsonschema_errors({}, {}) is not None
    checks.report(
        "schema-validator",
        not st,
        "own validator accepts/refuses its fixed instances"
        + (f": {st}" if st else "")
        + f"; jsonschema package {'importable, used too' if have_js else 'not importable'}",
    )
    for name, m in sel.items():
        if "schema" not in m["roles"]:
            continue
        d = Path(m["dir"])
        runs = (
            [(0.0, 1), (1.0, 1), (1.0, 2)]
            if m["family"].startswith("tiny") or DRY_RUN
            else [(0.0, 1), (1.0, 1)]
        )
        for sname, schema in SCHEMAS.items():
            sf = scratch / f"{sname}.json"
            sf.write_text(json.dumps(schema))
            bad, seen = [], []
            for temp, seed in runs:
                try:
                    r = generate_json(
                        d,
                        "JSON:",
                        "--json-schema",
                        str(sf),
                        "--temp",
                        str(temp),
                        "--seed",
                        str(seed),
                        "--max-tokens",
                        "400",
                        device="cuda",
                    )
                except Exception as e:  # noqa: BLE001
                    bad.append(f"temp {temp} seed {seed}: {e}")
                    continue
                text = r["text"]
                seen.append(text)
                print(
                    f"   {name} {sname} temp {temp} seed {seed}: stop {r['stop']}, {text[:160]!r}",
                    flush=True,
                )
                if r["stop"] != "eog":
                    bad.append(
                        f"temp {temp} seed {seed}: stop {r['stop']!r}, not eog (grammar not complete)"
                    )
                    continue
                try:
                    v = json.loads(text)
                except ValueError as e:
                    bad.append(f"temp {temp} seed {seed}: not JSON ({e}): {text[:80]!r}")
                    continue
                errs = validate(v, schema)
                js = jsonschema_errors(v, schema)
                if errs or js:
                    bad.append(f"temp {temp} seed {seed}: invalid: {errs or js}: {text[:80]!r}")
            checks.report(
                f"schema-{name}-{sname}",
                not bad,
                f"{m['shape']} {m['dtype']}: {len(runs) - len(bad)}/{len(runs)} outputs ended, parsed and "
                f"validated (temp/seed {runs})" + (f"; {bad}" if bad else ""),
            )

    for f in scratch.iterdir():
        f.unlink()
    scratch.rmdir()
    print(
        f"== check_parity.py: {len(checks.passed)} passed, {len(checks.failed)} failed{TAG}",
        flush=True,
    )
    return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
