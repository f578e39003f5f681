"""Vocabulary.from_hf sharing: one vocabulary per tokenizer by default, or one of its
own with shared=False (cold caches of its own, the same masks)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import tether
from tether._native_call import native
from test_processors import tokenizer_for

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "format": "email"}, "n": {"type": "integer"}},
          "required": ["name", "n"]}


def _masks(vocab: tether.Vocabulary, text: str) -> list[np.ndarray]:
    """The mask before every character of text (and after the last)."""
    m = tether.Grammar.from_json_schema(SCHEMA, vocab).matcher()
    mask = np.zeros((1, (vocab.size + 31) // 32), dtype=np.int32)
    out = []
    for i in range(len(text) + 1):
        m.fill_next_token_bitmask(mask)
        out.append(mask[0].copy())
        if i < len(text):
            m.accept_text(text[i])
    return out


def test_shared_by_default_unshared_on_request() -> None:
    tok = tokenizer_for("llama3")
    shared = tether.Vocabulary.from_hf(tok)
    assert tether.Vocabulary.from_hf(tok) is shared
    own = tether.Vocabulary.from_hf(tok, shared=False)
    own2 = tether.Vocabulary.from_hf(tok, shared=False)
    assert own is not shared and own2 is not own and own._handle not in (shared._handle, own2._handle)
    assert tether.Vocabulary.from_hf(tok) is shared, "an unshared vocabulary took the shared one's place"
    assert (own.size, own.eog_token_ids) == (shared.size, shared.eog_token_ids)
    text = '{"name": "a.b@example.com", "n": 12}'
    for a, b in zip(_masks(shared, text), _masks(own, text)):
        assert np.array_equal(a, b)
    with pytest.raises(TypeError, match="shared must be a bool"):
        tether.Vocabulary.from_hf(tok, shared=1)  # type: ignore[arg-type]


def test_unshared_vocabulary_releases_its_handle() -> None:
    own = tether.Vocabulary.from_hf(tokenizer_for("llama3"), shared=False)
    h = own._handle
    assert native.bindings_VocabSize(h) == own.size
    g = tether.Grammar('root ::= "x"', own)
    del own
    gc.collect()
    # the grammar keeps its Python vocabulary, and with it the handle
    assert native.bindings_VocabSize(h) == g.vocab.size
    del g
    gc.collect()
    with pytest.raises(RuntimeError, match="vocab"):
        native.bindings_VocabSize(h)
