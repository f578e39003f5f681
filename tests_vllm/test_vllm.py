"""tether inside vLLM (issue 15), run by `make test-vllm` in the vLLM environment with
tether installed from its wheel (so vLLM finds the plugin entry point as a user's
installation would).

- offline LLM: >= 20 requests over 4 JSON schemas, regexes, GBNF grammars and choices,
  batched with unconstrained requests; every constrained output complete and valid
  (json + jsonschema, re.fullmatch, tether's GBNF matcher); tok/s with and without tether
  from the same run;
- the custom logits-processor route (extra_args={"tether": ...});
- the backend's grammar object: accept, validate, rollback (speculative decoding),
  termination on the request's own stop tokens only, bitmask rows;
- refused requests: a clear error naming tether;
- the OpenAI server on 127.0.0.1 answering response_format json_schema requests.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import jsonschema
import pytest

SCHEMAS = [
    {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer", "minimum": 0, "maximum": 99}},
        "required": ["ok", "n"],
        "additionalProperties": False,
    },
    {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "minItems": 1, "maxItems": 4},
    {
        "type": "object",
        "properties": {
            "name": {"enum": ["ada", "bob", "cy"]},
            "age": {"type": "integer", "minimum": 1, "maximum": 120},
            "tags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2},
        },
        "required": ["name", "age", "tags"],
        "additionalProperties": False,
    },
    {"type": "number", "minimum": -10, "maximum": 10},
]
REGEXES = [r"[A-Z]{2}-\d{3}", r"(yes|no)!", r"\d{1,3}\.\d{2}"]
GRAMMARS = [
    'root ::= ("yes" | "no") " " [0-9]{1,2}',
    'root ::= "(" expr ")"\nexpr ::= [a-c] | [a-c] "+" [a-c]',
    'root ::= "<" [xyz]{2,4} ">"',
]
CHOICES = [["red", "green", "blue"], ["alpha", "beta"]]
MAX_TOKENS = 96


def gbnf_ok(gbnf: str, text: str, tokenizer_dir: Path) -> bool:
    """Whether text is a complete sentence of the GBNF grammar (tether's matcher over the
    real tokenizer: accept the text, then the end token must be allowed)."""
    import tether
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    return tether.Grammar(gbnf, tok).matcher().accepts(text)  # a complete match


def constrained_requests():
    """(kind, value, check) for every constrained request of the mixed batch: 4 schemas x
    3, 3 regexes, 3 GBNF grammars, 2 choices = 20."""
    reqs = []
    for s in SCHEMAS:
        for _ in range(3):
            reqs.append(("json", s))
    reqs += [("regex", r) for r in REGEXES]
    reqs += [("grammar", g) for g in GRAMMARS]
    reqs += [("choice", c) for c in CHOICES]
    return reqs


def check(kind: str, value, text: str, model_dir: Path) -> None:
    if kind == "json":
        jsonschema.validate(json.loads(text), value)
    elif kind == "regex":
        assert re.fullmatch(value, text), (value, text)
    elif kind == "grammar":
        assert gbnf_ok(value, text, model_dir), (value, text)
    elif kind == "choice":
        assert text in value, (value, text)


def test_offline_mixed_batch_all_valid_and_speed(llm, model_dir: Path) -> None:
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    reqs = constrained_requests()
    assert len(reqs) >= 20
    params, prompts, kinds = [], [], []
    for i, (kind, value) in enumerate(reqs):
        params.append(SamplingParams(max_tokens=MAX_TOKENS, seed=i, structured_outputs=StructuredOutputsParams(**{kind: value})))
        prompts.append(f"Request {i} ({kind}):")
        kinds.append((kind, value))
        if i % 3 == 0:  # unconstrained requests mixed into the same batch
            params.append(SamplingParams(max_tokens=24, seed=1000 + i))
            prompts.append(f"Free text {i}:")
            kinds.append(None)
    t0 = time.perf_counter()
    outs = llm.generate(prompts, params, use_tqdm=False)
    mixed_s = time.perf_counter() - t0
    n_free = 0
    constrained_tokens = 0
    for o, k in zip(outs, kinds, strict=True):
        c = o.outputs[0]
        if k is None:
            n_free += 1
            assert c.token_ids, "an unconstrained request produced nothing"
            continue
        assert c.finish_reason == "stop", f"{k}: did not finish: {c.text!r}"
        check(k[0], k[1], c.text, model_dir)
        constrained_tokens += len(c.token_ids)
    assert n_free >= 6

    # Same run, same engine: the constrained requests again, then as many free requests
    # each generating the same number of tokens (ignore_eos, max_tokens = the constrained
    # output's length), so tokens/s compare like for like.
    lens = []
    t0 = time.perf_counter()
    outs = llm.generate(
        [p for p, k in zip(prompts, kinds) if k is not None],
        [p for p, k in zip(params, kinds) if k is not None],
        use_tqdm=False,
    )
    with_s = time.perf_counter() - t0
    for o, k in zip(outs, [k for k in kinds if k is not None]):
        check(k[0], k[1], o.outputs[0].text, model_dir)
        lens.append(len(o.outputs[0].token_ids))
    free_params = [SamplingParams(max_tokens=n, min_tokens=n, ignore_eos=True, seed=i) for i, n in enumerate(lens)]
    t0 = time.perf_counter()
    free = llm.generate([f"Request {i}:" for i in range(len(lens))], free_params, use_tqdm=False)
    without_s = time.perf_counter() - t0
    assert [len(o.outputs[0].token_ids) for o in free] == lens
    n = sum(lens)
    print(
        f"\nvLLM offline, {len(lens)} requests, {n} tokens: with tether {n / with_s:.1f} tok/s, "
        f"without {n / without_s:.1f} tok/s (ratio {without_s / with_s:.2f}); mixed batch of "
        f"{len(prompts)} requests in {mixed_s:.1f} s (2-core machine, loaded)"
    )


def test_logits_processor_route(llm, model_dir: Path) -> None:
    from vllm import SamplingParams

    reqs = [("json", SCHEMAS[0]), ("json", SCHEMAS[2]), ("regex", REGEXES[0]), ("grammar", GRAMMARS[2]), ("choice", CHOICES[1])]
    params = [SamplingParams(max_tokens=MAX_TOKENS, seed=i, extra_args={"tether": {k: v}}) for i, (k, v) in enumerate(reqs)]
    params.append(SamplingParams(max_tokens=16, seed=99))  # untouched
    outs = llm.generate([f"Item {i}:" for i in range(len(params))], params, use_tqdm=False)
    for o, (k, v) in zip(outs, reqs):
        assert o.outputs[0].finish_reason == "stop", o.outputs[0].text
        check(k, v, o.outputs[0].text, model_dir)
    assert outs[-1].outputs[0].token_ids


def test_refused_requests_are_clear_errors(llm) -> None:
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    lark = StructuredOutputsParams(grammar='start: "a" | "b"')
    with pytest.raises(Exception, match=r"tether backend.*GBNF"):
        llm.generate(["x"], SamplingParams(max_tokens=4, structured_outputs=lark), use_tqdm=False)
    bad_gbnf = StructuredOutputsParams(grammar='root ::= "a" missing')
    with pytest.raises(Exception, match=r"tether backend.*missing"):
        llm.generate(["x"], SamplingParams(max_tokens=4, structured_outputs=bad_gbnf), use_tqdm=False)
    with pytest.raises(Exception, match=r"extra_args\[\"tether\"\]"):
        llm.generate(["x"], SamplingParams(max_tokens=4, extra_args={"tether": {"jsn": {}}}), use_tqdm=False)
    # The engine still serves after refusing.
    ok = llm.generate(["x"], SamplingParams(max_tokens=8, structured_outputs=StructuredOutputsParams(choice=["a", "b"])), use_tqdm=False)
    assert ok[0].outputs[0].text in ("a", "b")


def test_backend_grammar_rollback_stop_tokens_and_bitmask(llm, monkeypatch: pytest.MonkeyPatch) -> None:
    """The grammar object vLLM drives, on the engine's own config and tokenizer."""
    import torch

    from tether.vllm import TetherBackend
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions

    cfg = llm.llm_engine.vllm_config
    tok = llm.get_tokenizer()
    backend = TetherBackend(cfg, tokenizer=tok, vocab_size=cfg.model_config.get_vocab_size())
    eot = tok.convert_tokens_to_ids("<|eot_id|>")
    eot_text = tok.convert_tokens_to_ids("<|end_of_text|>")
    g = backend.compile_grammar(StructuredOutputOptions.REGEX, r"ab(c|d)", stop_token_ids={eot})
    ids = [tok.convert_tokens_to_ids("ab"), tok.convert_tokens_to_ids("c")]  # two tokens: "ab", "c"
    d = tok.convert_tokens_to_ids("d")
    mask = backend.allocate_token_bitmask(4)
    assert mask.dtype == torch.int32 and mask.shape == (4, (cfg.model_config.get_vocab_size() + 31) // 32)
    assert g.validate_tokens(ids + [eot]) == ids + [eot] and g.num_processed_tokens == 0
    assert g.accept_tokens("r", ids)
    g.fill_bitmask(mask, 2)
    allowed = {i for i in range(mask.shape[1] * 32) if (int(mask[2, i // 32]) >> (i % 32)) & 1}
    assert allowed == {eot}, "only the request's own stop token ends it; <|end_of_text|> is not one"
    assert eot_text not in allowed
    assert not g.accept_tokens("r", [eot_text]), "a stop token the request did not ask for is refused"
    assert g.accept_tokens("r", [eot]) and g.is_terminated()
    g.rollback(2)  # speculative decoding rejected the last two tokens
    assert not g.is_terminated() and g.num_processed_tokens == len(ids) - 1
    assert g.validate_tokens([d, eot, d]) == [d, eot], "validation stops at termination"
    assert g.accept_tokens("r", [d, eot]) and g.is_terminated()
    g.reset()
    assert g.num_processed_tokens == 0 and g.validate_tokens(ids) == ids

    # The same request again reuses the compiled grammar (an LRU of compiled grammars,
    # as vLLM keeps xgrammar's); its matcher starts fresh. Other stop tokens, another
    # kind or other text compile anew.
    g2 = backend.compile_grammar(StructuredOutputOptions.REGEX, r"ab(c|d)", stop_token_ids={eot})
    assert backend.grammars.hits == 1 and g2.matcher is not g.matcher
    assert g2.num_processed_tokens == 0 and not g2.is_terminated()
    assert g2.accept_tokens("r2", ids) and g2.accept_tokens("r2", [eot]) and g2.is_terminated()
    assert not g.is_terminated(), "the first request's matcher is its own"
    backend.compile_grammar(StructuredOutputOptions.REGEX, r"ab(c|d)", stop_token_ids={eot, eot_text})
    backend.compile_grammar(StructuredOutputOptions.GRAMMAR, 'root ::= "ab" [cd]', stop_token_ids={eot})
    backend.compile_grammar(StructuredOutputOptions.REGEX, r"ab(c|e)", stop_token_ids={eot})
    assert (backend.grammars.hits, backend.grammars.misses, len(backend.grammars)) == (1, 4, 4)
    backend.destroy()
    assert len(backend.grammars) == 0

    # The environment picks the whitespace and the cache size; a bad value is a clear error.
    monkeypatch.setenv("TETHER_VLLM_WHITESPACE", "flexible")
    monkeypatch.setenv("TETHER_VLLM_GRAMMAR_CACHE", "0")
    b2 = TetherBackend(cfg, tokenizer=tok, vocab_size=cfg.model_config.get_vocab_size())
    assert b2.whitespace == "flexible" and b2.grammars.size == 0
    for var, bad, good in (("TETHER_VLLM_WHITESPACE", "loose", "bounded"), ("TETHER_VLLM_GRAMMAR_CACHE", "-3", "4")):
        monkeypatch.setenv(var, bad)
        with pytest.raises(ValueError, match=var):
            TetherBackend(cfg, tokenizer=tok, vocab_size=cfg.model_config.get_vocab_size())
        monkeypatch.setenv(var, good)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def test_openai_server_response_format(model_dir: Path, tmp_path: Path) -> None:
    port = _free_port()
    log = open(tmp_path / "server.log", "w")
    env = dict(os.environ, VLLM_ENABLE_V1_MULTIPROCESSING="0", OMP_NUM_THREADS="1")
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir), "--host", "127.0.0.1", "--port", str(port),
            "--dtype", "float32", "--enforce-eager", "--kv-cache-memory-bytes", str(256 * 1024 * 1024),
            "--max-model-len", "512", "--structured-outputs-config", json.dumps({"backend": "tether"}),
        ],
        stdout=log, stderr=subprocess.STDOUT, env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 480
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vllm serve exited with {proc.returncode}:\n{(tmp_path / 'server.log').read_text()[-4000:]}")
            try:
                with urllib.request.urlopen(base + "/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                pytest.fail("vllm serve did not become ready in 8 minutes")
            time.sleep(2)
        model = _get_model(base)
        for i, schema in enumerate(SCHEMAS):
            out = _post(base + "/v1/chat/completions", {
                "model": model, "max_tokens": MAX_TOKENS, "seed": i,
                "messages": [{"role": "user", "content": f"Give me item {i} as JSON."}],
                "response_format": {"type": "json_schema", "json_schema": {"name": f"s{i}", "schema": schema}},
            })
            choice = out["choices"][0]
            assert choice["finish_reason"] == "stop", choice
            jsonschema.validate(json.loads(choice["message"]["content"]), schema)
        out = _post(base + "/v1/completions", {
            "model": model, "prompt": "Code:", "max_tokens": 16, "structured_outputs": {"regex": REGEXES[0]},
        })
        assert re.fullmatch(REGEXES[0], out["choices"][0]["text"]), out
        # A refused request is a 400 with tether's reason, and the server goes on.
        req = urllib.request.Request(
            base + "/v1/completions",
            data=json.dumps({"model": model, "prompt": "x", "max_tokens": 4, "structured_outputs": {"grammar": 'start: "a"'}}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=60)
        assert err.value.code == 400 and "GBNF" in err.value.read().decode()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _get_model(base: str) -> str:
    with urllib.request.urlopen(base + "/v1/models", timeout=30) as r:
        return json.loads(r.read())["data"][0]["id"]


def test_spec_docstring_examples_run() -> None:
    import doctest

    import tether.vllm.spec

    result = doctest.testmod(tether.vllm.spec, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 2 and result.failed == 0
