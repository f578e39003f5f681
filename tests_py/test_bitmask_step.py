"""The fast bitmask path of a decoding loop (issue 14): Matcher.accept_and_fill (accept the
sampled token and fill the next row in one Go call), the checked-once buffer of
Matcher.fill_next_token_bitmask (rechecked when the array changes), and the allowed-token
count on dense masks. Real Llama-3 tokenizer, real dev-split schemas; the oracle is
Matcher.allowed_token_ids on an independent matcher."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_bitmask import bits, dev_sample
from test_processors import tokenizer_for

import tether


def test_accept_and_fill_equals_accept_then_fill_on_dev_instances() -> None:
    tok = tokenizer_for("llama3")
    import json

    for name, schema, data in dev_sample(4):
        g = tether.Grammar(tether.json_schema_to_gbnf(schema)[0], tok)
        ids = tok.encode(json.dumps(data), add_special_tokens=False)
        fast, oracle = g.matcher(), g.matcher()
        mask = tether.allocate_token_bitmask(2, len(tok), torch=False)
        assert fast.fill_next_token_bitmask(mask, 1) is None
        for step, t in enumerate(ids):
            assert set(bits(mask, 1, len(tok))) == set(oracle.allowed_token_ids()), (name, step)
            fast.accept_and_fill(t, mask, 1)
            oracle.accept_token(t)
        assert set(bits(mask, 1, len(tok))) == set(oracle.allowed_token_ids()), name
        assert fast.can_end == oracle.can_end


def test_accept_and_fill_refused_token_clears_row_and_keeps_state() -> None:
    tok = tokenizer_for("llama3")
    g = tether.Grammar('root ::= "yes" | "no"', tok)
    m = g.matcher()
    mask = np.full((1, (len(tok) + 31) // 32), -1, dtype=np.int32)
    with pytest.raises(tether.GrammarError):
        m.accept_and_fill(tok.convert_tokens_to_ids("maybe"), mask)
    assert not mask.any()
    m.accept_and_fill(tok.convert_tokens_to_ids("yes"), mask)
    assert m.can_end
    eog = set(g.vocab.eog_token_ids)
    assert set(bits(mask, 0, len(tok))) == eog
    with pytest.raises(TypeError):
        m.accept_and_fill(True, mask)
    with pytest.raises(IndexError):
        m.accept_and_fill(tok.convert_tokens_to_ids("yes"), mask, 1)


def test_accept_and_fill_end_token_terminates() -> None:
    tok = tokenizer_for("llama3")
    eot = tok.convert_tokens_to_ids("<|eot_id|>")
    g = tether.Grammar('root ::= "yes"', tether.Vocabulary.from_hf(tok, [eot]))
    m = g.matcher()
    mask = tether.allocate_token_bitmask(1, len(tok), torch=False)
    m.accept_and_fill(tok.convert_tokens_to_ids("yes"), mask)
    m.accept_and_fill(eot, mask)
    assert m.is_terminated()
    with pytest.raises(tether.GrammarError, match="terminated"):
        m.accept_and_fill(eot, mask)
    m.rollback(1)
    assert not m.is_terminated() and m.can_end


def test_reused_bitmask_is_rechecked_when_it_changes() -> None:
    tok = tokenizer_for("llama3")
    words = (len(tok) + 31) // 32
    m = tether.Grammar('root ::= "yes"', tok).matcher()
    yes = list(m.allowed_token_ids())  # "y", "ye", "yes", ...
    assert tok.convert_tokens_to_ids("yes") in yes

    a = np.zeros((2, words), dtype=np.int32)
    m.fill_next_token_bitmask(a, 1)
    assert list(bits(a, 1, len(tok))) == yes
    a.dtype = np.int64  # same memory, now [2, words/2] int64: refused, not written
    with pytest.raises(TypeError):
        m.fill_next_token_bitmask(a)
    a.dtype = np.int32
    a.shape = (1, 2 * words)  # one wider row: the second half is padding, cleared
    a[:] = -1
    m.fill_next_token_bitmask(a)
    assert list(bits(a, 0, 2 * words * 32)) == yes

    t = torch.zeros((1, words), dtype=torch.int32)
    m.fill_next_token_bitmask(t)
    old = t.clone()
    fresh = torch.zeros((1, words), dtype=torch.int32)
    t.set_(fresh.untyped_storage(), 0, (1, words))  # same tensor object, new memory
    m.fill_next_token_bitmask(t)
    assert list(bits(fresh.numpy(), 0, len(tok))) == yes
    assert torch.equal(old, t)


@pytest.mark.parametrize("extra_words", [0, 1])  # an even and an odd number of words
def test_fill_count_on_dense_masks(extra_words: int) -> None:
    tok = tokenizer_for("llama3")
    words = (len(tok) + 31) // 32 + extra_words
    m = tether.Grammar('root ::= [^"]* "\\""', tok).matcher()
    mask = np.zeros((1, words), dtype=np.int32)
    assert m.fill_next_token_bitmask(mask) is None
    n = m.fill_next_token_bitmask(mask, count=True)
    assert n == len(m.allowed_token_ids()) > 100_000
    assert n == int(np.unpackbits(mask.view(np.uint8)).sum())


def test_fastcall_entry_points_match_gopy_wrappers_and_check_arguments() -> None:
    """The per-token calls go through the extension's METH_FASTCALL entry points
    (bindings/_fastpath), not gopy's wrappers: on dev-split instances they write the same
    rows and counts as gopy's MatcherFillBitmask / MatcherAcceptToken, and bad arguments
    are a TypeError or OverflowError before Go runs, never a crash."""
    import json

    from tether._native_call import fast, native

    tok = tokenizer_for("llama3")
    for name, schema, data in dev_sample(3):
        g = tether.Grammar(tether.json_schema_to_gbnf(schema)[0], tok)
        a, b = g.matcher(), g.matcher()
        ma = tether.allocate_token_bitmask(1, len(tok), torch=False)
        mb = ma.copy()
        rows, words = ma.shape
        for step, t in enumerate(tok.encode(json.dumps(data), add_special_tokens=False)):
            n = fast.fill_count(a._handle, ma.ctypes.data, rows, words, 0)
            assert n == native.bindings_MatcherFillBitmask(b._handle, mb.ctypes.data, rows, words, 0), (name, step)
            assert np.array_equal(ma, mb), (name, step)
            fast.accept_token(a._handle, t)
            native.bindings_MatcherAcceptToken(b._handle, t)
        fast.accept_fill(a._handle, -1, ma.ctypes.data, rows, words, 0)
        native.bindings_MatcherFillBitmask(b._handle, mb.ctypes.data, rows, words, 0)
        assert np.array_equal(ma, mb), name

    m = g.matcher()
    with pytest.raises(TypeError, match="takes 6 arguments"):
        fast.accept_fill(m._handle, -1, ma.ctypes.data, rows, words)
    with pytest.raises(TypeError, match="integer is required"):
        fast.accept_fill(m._handle, "1", ma.ctypes.data, rows, words, 0)
    with pytest.raises(TypeError, match="integer is required"):
        fast.fill_count(m._handle, 1.5, rows, words, 0)
    with pytest.raises(OverflowError):
        fast.accept_token(m._handle, 1 << 70)
    with pytest.raises(OverflowError):
        fast.fill_count(m._handle, -1, rows, words, 0)
    with pytest.raises(RuntimeError, match="row index 3 outside"):
        fast.accept_fill(m._handle, -1, ma.ctypes.data, rows, words, 3)


def test_fastcall_fill_from_two_threads() -> None:
    """Two Python threads fill masks of one grammar through the fast path at once (the
    GIL is released around each Go call, so the Go calls overlap): both finish and every
    mask is right."""
    import threading

    tok = tokenizer_for("llama3")
    g = tether.Grammar('root ::= [^"]* "\\""', tok)
    want = set(g.matcher().allowed_token_ids())
    errors: list[BaseException] = []

    def work() -> None:
        try:
            m = g.matcher()
            mask = tether.allocate_token_bitmask(1, len(tok), torch=False)
            for _ in range(50):
                mask[:] = 0
                m.fill_next_token_bitmask(mask)
                assert set(bits(mask, 0, len(tok))) == want
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in ts)
    assert not errors, errors


def test_numpy_fast_path_checks_the_array_every_call() -> None:
    """numpy bitmasks are checked inside the native call (accept_fill_array): a read-only,
    strided, wrong-dtype, empty or resized array and a bad index each get the checked
    path's error and nothing is written or accepted; a 1-D array is one row."""
    tok = tokenizer_for("llama3")
    words = (len(tok) + 31) // 32
    g = tether.Grammar('root ::= "yes" | "no"', tok)
    m = g.matcher()
    want = list(g.matcher().allowed_token_ids())
    yes = tok.convert_tokens_to_ids("yes")

    ro = np.full((1, words), -1, dtype=np.int32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        m.fill_next_token_bitmask(ro)
    with pytest.raises(ValueError, match="read-only"):
        m.accept_and_fill(yes, ro)
    assert not m.is_terminated() and list(m.allowed_token_ids()) == want  # nothing accepted
    strided = np.zeros((2, words), dtype=np.int32)[:, ::2]
    with pytest.raises(ValueError, match="contiguous"):
        m.fill_next_token_bitmask(strided)
    with pytest.raises(TypeError, match="int32"):
        m.accept_and_fill(yes, np.zeros((1, words), dtype=np.float32))
    with pytest.raises(ValueError, match="shape"):
        m.fill_next_token_bitmask(np.zeros((0, words), dtype=np.int32))
    with pytest.raises(ValueError, match=">= 0"):
        m.fill_next_token_bitmask(np.zeros((1, words), dtype=np.int32), -1)
    with pytest.raises(IndexError, match="index 1 outside"):
        m.accept_and_fill(yes, np.zeros((1, words), dtype=np.int32), 1)
    assert list(m.allowed_token_ids()) == want

    row = np.full(words, -1, dtype=np.int32)  # 1-D: one row
    m.fill_next_token_bitmask(row)
    assert list(bits(row[None, :], 0, len(tok))) == want
    u = np.zeros((1, words), dtype=np.uint32)
    m.fill_next_token_bitmask(u)
    assert list(bits(u.view(np.int32), 0, len(tok))) == want

    a = np.zeros((1, words), dtype=np.int32)
    m.fill_next_token_bitmask(a)
    a.resize((3, words), refcheck=False)  # new memory: the next fill must use it
    a[:] = 0
    m.fill_next_token_bitmask(a, 2)
    assert list(bits(a, 2, len(tok))) == want and not a[:2].any()
    m.accept_and_fill(yes, a, 2)
    assert m.can_end and set(bits(a, 2, len(tok))) == set(g.vocab.eog_token_ids)


def test_grammar_from_json_schema_equals_the_two_step_path() -> None:
    """Grammar.from_json_schema (convert and compile in one call, the grammar parsed once)
    gives the grammar json_schema_to_gbnf + Grammar give: same text, same masks along
    dev-split instances; its errors and ignored keywords are the two-step path's."""
    import json

    tok = tokenizer_for("llama3")
    for name, schema, data in dev_sample(3):
        one = tether.Grammar.from_json_schema(schema, tok, whitespace="flexible")
        text, ignored = tether.json_schema_to_gbnf(schema, whitespace="flexible")
        two = tether.Grammar(text, tok)
        assert one.gbnf == text and one.ignored == ignored == [], name
        a, b = one.matcher(), two.matcher()
        for step, t in enumerate(tok.encode(json.dumps(data), add_special_tokens=False)):
            assert np.array_equal(a.allowed_token_ids(), b.allowed_token_ids()), (name, step)
            a.accept_token(t)
            b.accept_token(t)
        assert a.can_end and b.can_end, name

    lenient = {"type": "array", "uniqueItems": True}
    g = tether.Grammar.from_json_schema(lenient, tok, lenient=True)
    assert g.ignored == tether.json_schema_to_gbnf(lenient, lenient=True)[1] != []
    with pytest.raises(tether.SchemaError) as e:
        tether.Grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "nope"}}}, tok)
    assert e.value.pointer == "/properties/a"
    with pytest.raises(tether.SchemaError):
        tether.Grammar.from_json_schema("{not json", tok)
    with pytest.raises(ValueError, match="whitespace"):
        tether.Grammar.from_json_schema({}, tok, whitespace="wide")
    with pytest.raises(ValueError, match="max_stacks"):
        tether.Grammar.from_json_schema({}, tok, max_stacks=0)
    with pytest.raises(TypeError):
        tether.Grammar.from_json_schema({}, "not a tokenizer")
