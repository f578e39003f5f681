"""Matchers that are freed hand their caches to the grammar's next matcher
(engine.Matcher.Release, called when a Python Matcher is freed): every mask of a
matcher that starts with another's caches is the mask a matcher of a grammar that
never reuses caches gives, one after another and from several threads at once."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import tether
from test_processors import tokenizer_for

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "tags": {"type": "array", "items": {"type": "string"}},
        "n": {"type": "number"},
        "inner": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
    },
    "required": ["name"],
}
TEXTS = [
    '{"name": "héllo", "tags": ["a", "bc"], "n": -1.5}',
    '{"name": "", "n": 3, "inner": {"ok": true}}',
    '{"name": "x", "tags": []}',
]


@pytest.fixture(scope="module")
def setup() -> tuple:
    tok = tokenizer_for("llama3")
    vocab = tether.Vocabulary.from_hf(tok)
    ids = [tok.encode(t, add_special_tokens=False) for t in TEXTS]
    return tok, vocab, ids


def walk(m: tether.Matcher, vocab: tether.Vocabulary, ids: list[int]) -> list[np.ndarray]:
    """The mask before every token and after the last."""
    out = []
    for tid in [*ids, None]:
        mask = tether.allocate_token_bitmask(1, vocab.size, torch=False)
        m.fill_next_token_bitmask(mask)
        out.append(np.array(mask[0], copy=True))
        if tid is not None:
            m.accept_token(tid)
    return out


def reference(vocab: tether.Vocabulary, ids: list[list[int]]) -> list[list[np.ndarray]]:
    # A grammar of its own (another stack limit, which these texts never meet, so that
    # the compiled-grammar cache does not give the same one) whose matchers are all
    # kept alive while they walk: none starts with another's caches.
    g = tether.Grammar.from_json_schema(SCHEMA, vocab, max_stacks=4000)
    assert g.reused_matchers == 0
    keep = [g.matcher() for _ in ids]
    return [walk(m, vocab, x) for m, x in zip(keep, ids)]


def test_freed_matchers_caches_serve_the_next(setup: tuple) -> None:
    _, vocab, ids = setup
    want = reference(vocab, ids)
    g = tether.Grammar.from_json_schema(SCHEMA, vocab)
    before = g.reused_matchers
    for _ in range(3):
        for i, x in enumerate(ids):
            m = g.matcher()
            got = walk(m, vocab, x)
            assert all(np.array_equal(a, b) for a, b in zip(got, want[i], strict=True)), TEXTS[i]
            del m  # freed: its caches go to the next g.matcher()
            gc.collect()
    # every g.matcher() after the first takes the caches of the one freed before it
    assert g.reused_matchers - before >= 3 * len(ids) - 1


def test_freed_matchers_from_threads(setup: tuple) -> None:
    _, vocab, ids = setup
    want = reference(vocab, ids)
    g = tether.Grammar.from_json_schema(SCHEMA, vocab)
    failures: list[str] = []

    def work(k: int) -> None:
        for it in range(6):
            i = (k + it) % len(ids)
            m = g.matcher()
            if it % 3 == 2:
                m = m.clone()  # the first one is freed here, its clone goes on
            got = walk(m, vocab, ids[i])
            if not all(np.array_equal(a, b) for a, b in zip(got, want[i], strict=True)):
                failures.append(f"thread {k}: {TEXTS[i]}")
            del m

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert not failures
    assert g.reused_matchers > 0
