"""The bitmask API for your own decoding loop (issue 15): Matcher.fill_next_token_bitmask
in xgrammar's layout, accept_tokens / rollback / is_terminated / reset / forced_text, and
tether.fill_next_token_bitmasks for a batch of different grammars in one Go call.

The oracle is Matcher.allowed_token_ids (the engine's own mask, itself checked against a
per-token brute force in tests_go), compared on every step of real JSON Schema Bench
instances tokenized by the real Llama-3 tokenizer.
"""

from __future__ import annotations

import json
import random
from functools import lru_cache

import numpy as np
import pytest
import torch
from conftest import ROOT, tokenizer_path
from test_processor_usage import AMBIGUOUS
from test_processors import tokenizer_for

import tether

DEV = ROOT.parent / "shared" / "jsonschemabench" / "maskbench-dev.jsonl"


@lru_cache(maxsize=None)
def dev_sample(n: int = 6, seed: int = 15) -> list[tuple[str, dict, object]]:
    """n (name, schema, valid instance) triples from the dev split whose schema tether
    compiles, picked at random (fixed seed) among schemas with a valid instance."""
    path = DEV if DEV.exists() else ROOT / "shared" / "jsonschemabench" / "maskbench-dev.jsonl"
    if not path.exists():
        pytest.fail(f"maskbench-dev.jsonl missing at {path}")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if any(t["valid"] for t in r.get("tests") or [])]
    random.Random(seed).shuffle(rows)
    out = []
    for r in rows:
        try:
            tether.json_schema_to_gbnf(r["schema"])
        except tether.TetherError:
            continue  # refused schemas are not this test's subject
        data = next(t["data"] for t in r["tests"] if t["valid"])
        out.append((r["name"], r["schema"], data))
        if len(out) == n:
            break
    return out


def bits(mask: np.ndarray | torch.Tensor, row: int, vocab: int) -> np.ndarray:
    """The ids set in one row of a bitmask, decoded independently of tether (LSB first)."""
    words = np.asarray(mask[row]).astype(np.uint32)
    return np.array([i for i in range(vocab) if (int(words[i // 32]) >> (i % 32)) & 1])


def test_layout_is_xgrammars_lsb_first() -> None:
    tok = tokenizer_for("llama3")
    yes, no = tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("no")
    g = tether.Grammar('root ::= "yes" | "no"', tok)
    width = len(tok) + 70  # a model with padding columns past the tokenizer
    for mask in (np.full((3, (width + 31) // 32), -1, dtype=np.int32), torch.full((3, (width + 31) // 32), -1, dtype=torch.int32)):
        m = g.matcher()
        assert m.fill_next_token_bitmask(mask, index=1, count=True) == len(m.allowed_token_ids())
        row = np.asarray(mask[1]).astype(np.uint32)
        assert (int(row[yes // 32]) >> (yes % 32)) & 1 and (int(row[no // 32]) >> (no % 32)) & 1
        assert set(bits(mask, 1, width)) == set(m.allowed_token_ids().tolist())
        assert not np.asarray(mask[1])[len(tok) // 32 + 1 :].any(), "padding columns must be cleared"
        assert (np.asarray(mask[0]) == -1).all() and (np.asarray(mask[2]) == -1).all(), "other rows untouched"
    # 1-D is one row; uint32 numpy works too.
    one = np.zeros((len(tok) + 31) // 32, dtype=np.uint32)
    g.matcher().fill_next_token_bitmask(one)
    assert set(bits(one[None], 0, len(tok))) == {yes, no} | set(g.matcher().allowed_token_ids().tolist())


def test_bitmask_equals_allowed_token_ids_on_dev_instances() -> None:
    """Every step of a sample of maskbench-dev valid instances: the single-row fill, the
    batch fill and allowed_token_ids agree bit for bit; the instance's own next token is
    always allowed, and the end token exactly at the end."""
    tok = tokenizer_for("llama3")
    vocab = tether.Vocabulary.from_hf(tok)
    eos = vocab.eog_token_ids[0]
    sample = dev_sample()
    assert len(sample) >= 6
    steps = 0
    for name, schema, data in sample:
        gbnf, _ = tether.json_schema_to_gbnf(schema)
        g = tether.Grammar(gbnf, vocab)
        m = g.matcher()
        ids = tok.encode(json.dumps(data), add_special_tokens=False) + [eos]
        single = tether.allocate_token_bitmask(1, len(tok), torch=False)
        batch = tether.allocate_token_bitmask(4, len(tok) + 64)
        for i, t in enumerate(ids):
            want = m.allowed_token_ids()
            m.fill_next_token_bitmask(single)
            got = tether.unpack_token_bitmask(single, len(tok))[0]
            assert np.array_equal(np.flatnonzero(got), want), f"{name} step {i}"
            tether.fill_next_token_bitmasks([m, m.clone()], batch, indices=[3, 0])
            both = tether.unpack_token_bitmask(batch, len(tok) + 64)
            assert np.array_equal(np.flatnonzero(both[3]), want) and np.array_equal(np.flatnonzero(both[0]), want)
            assert got[t], f"{name} step {i}: the instance's token {t} is masked"
            assert got[eos] == (i == len(ids) - 1), f"{name} step {i}: end token allowed={got[eos]}"
            m.accept_token(t)
            steps += 1
        assert m.is_terminated()
    assert steps > 100, steps


def test_batch_of_different_grammars_equals_single_fills() -> None:
    """64 matchers over 64 different grammars (schemas and regexes), at different
    positions, in one call: each row equals that matcher's own fill."""
    tok = tokenizer_for("llama3")
    grammars = [tether.Grammar(tether.regex_to_gbnf(rf"[a-c]{{{i + 1}}}x\d{{1,{i % 5 + 1}}}"), tok) for i in range(32)]
    for name, schema, _ in dev_sample()[:8]:
        grammars.append(tether.Grammar(tether.json_schema_to_gbnf(schema)[0], tok))
    while len(grammars) < 64:
        grammars.append(tether.Grammar(tether.json_schema_to_gbnf({"type": "array", "maxItems": len(grammars)})[0], tok))
    matchers = [g.matcher() for g in grammars]
    for i, m in enumerate(matchers[:32]):
        m.accept_text("abc"[: i % 3 + 1] if i >= 2 else "a"[: i % 2])
    batch = tether.allocate_token_bitmask(64, len(tok))
    tether.fill_next_token_bitmasks(matchers, batch)
    one = tether.allocate_token_bitmask(1, len(tok))
    for r, m in enumerate(matchers):
        m.fill_next_token_bitmask(one)
        assert torch.equal(batch[r], one[0]), f"row {r}"


def test_accept_rollback_terminate_reset_forced() -> None:
    tok = tokenizer_for("llama3")
    eot = tok.convert_tokens_to_ids("<|eot_id|>")
    g = tether.Grammar('root ::= "{\\"name\\": \\"" [a-z]+ "\\"}"', tether.Vocabulary.from_hf(tok, [eot]))
    m = g.matcher()
    assert m.forced_text() == '{"name": "'
    assert m.forced_text(max_bytes=3) == '{"n'
    ids = tok.encode('{"name": "abc"}', add_special_tokens=False)
    m.accept_tokens(ids)
    assert m.can_end and not m.is_terminated() and m.forced_text() == ""
    m.accept_token(eot)
    assert m.is_terminated()
    with pytest.raises(tether.GrammarError, match="terminated"):
        m.accept_token(eot)
    m.rollback(1)
    assert not m.is_terminated() and m.can_end
    m.rollback(len(ids))
    assert m.forced_text() == '{"name": "'
    # accept_tokens is all or nothing.
    bad = tok.encode('{"name": 7', add_special_tokens=False)
    with pytest.raises(tether.GrammarError):
        m.accept_tokens(bad)
    assert m.forced_text() == '{"name": "', "a refused accept_tokens must leave the state as it was"
    m.accept_tokens(ids[:2])
    c = m.clone()
    m.reset()
    assert m.forced_text() == '{"name": "' and not c.accepts('{"name"')
    # Forced text stops before a character only partly forced, and is empty for a lazy grammar.
    assert tether.Grammar('root ::= "é" | "è"', tok).matcher().forced_text() == ""
    assert tether.Grammar('root ::= "ü!"', tok).matcher().forced_text() == "ü!"
    lazy = tether.Grammar('root ::= "<a>"', tok, triggers=tether.Triggers(words=["<a>"]))
    assert lazy.matcher().forced_text() == ""


def test_bad_bitmasks_are_clear_errors() -> None:
    tok = tokenizer_for("llama3")
    m = tether.Grammar('root ::= "a"', tok).matcher()
    words = (len(tok) + 31) // 32
    with pytest.raises(TypeError, match="int32"):
        m.fill_next_token_bitmask(np.zeros((1, words), dtype=np.int64))
    with pytest.raises(TypeError, match="int32"):
        m.fill_next_token_bitmask(torch.zeros((1, words), dtype=torch.float32))
    with pytest.raises(ValueError, match="contiguous"):
        m.fill_next_token_bitmask(torch.zeros((words, 2), dtype=torch.int32).t())
    with pytest.raises(IndexError, match="index 2 outside"):
        m.fill_next_token_bitmask(np.zeros((2, words), dtype=np.int32), index=2)
    with pytest.raises(tether.TetherError, match="fewer than the tokenizer"):
        m.fill_next_token_bitmask(np.zeros((1, words - 1), dtype=np.int32))
    with pytest.raises(TypeError, match="torch tensor or numpy array"):
        m.fill_next_token_bitmask([[0] * words])
    mask = np.zeros((2, words), dtype=np.int32)
    with pytest.raises(tether.TetherError, match="both name row 1"):
        tether.fill_next_token_bitmasks([m, m], mask, indices=[1, 1])
    with pytest.raises(ValueError, match="outside a bitmask of 2 rows"):
        tether.fill_next_token_bitmasks([m], mask, indices=[2])
    with pytest.raises(TypeError, match="not a tether.Matcher"):
        tether.fill_next_token_bitmasks([m, "x"], mask)
    with pytest.raises(ValueError, match="no matchers"):
        tether.fill_next_token_bitmasks([], mask)


def test_limit_in_a_batch_is_grammar_limit_error_and_clears_only_that_row() -> None:
    tok = tokenizer_for("llama3")
    x = tok.convert_tokens_to_ids("x")
    ambiguous = tether.Grammar(AMBIGUOUS, tok, max_stacks=64)
    fine = tether.Grammar('root ::= "x"+', tok).matcher()
    m = ambiguous.matcher()
    mask = np.full((2, (len(tok) + 31) // 32), -1, dtype=np.int32)
    with pytest.raises(tether.GrammarLimitError, match=r"matchers\[1\] \(bitmask row 1\)"):
        for _ in range(16):
            tether.fill_next_token_bitmasks([fine, m], mask)
            m.accept_token(x)
    assert not mask[1].any(), "the failing row is cleared, never left with a partial mask"
    assert mask[0].any()


def test_bitmask_docstring_examples_run() -> None:
    import doctest

    import tether.bitmask

    result = doctest.testmod(tether.bitmask, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 4 and result.failed == 0
