"""tether._lru: the vLLM backend's cache of compiled grammars (its size from the
environment, LRU order, concurrent callers), with real tether Grammars."""

from __future__ import annotations

import doctest
import threading

import pytest
from transformers import PreTrainedTokenizerFast

import tether
import tether._lru
from conftest import tokenizer_path
from tether._lru import DEFAULT_GRAMMAR_CACHE, LRUCache, grammar_cache_size


@pytest.fixture(scope="module")
def llama3_vocab() -> tether.Vocabulary:
    tok = PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_path("llama3")), eos_token="<|eot_id|>")
    return tether.Vocabulary.from_hf(tok)


def regex_grammar(pattern: str, vocab: tether.Vocabulary) -> tether.Grammar:
    return tether.Grammar(tether.regex_to_gbnf(pattern), vocab)


def test_docstring_examples_run() -> None:
    result = doctest.testmod(tether._lru)
    assert result.attempted >= 2 and result.failed == 0


@pytest.mark.parametrize(("raw", "want"), [(None, DEFAULT_GRAMMAR_CACHE), ("", DEFAULT_GRAMMAR_CACHE), ("0", 0), (" 12 ", 12)])
def test_cache_size_from_environment(monkeypatch: pytest.MonkeyPatch, raw: str | None, want: int) -> None:
    if raw is None:
        monkeypatch.delenv("TETHER_VLLM_GRAMMAR_CACHE", raising=False)
    else:
        monkeypatch.setenv("TETHER_VLLM_GRAMMAR_CACHE", raw)
    assert grammar_cache_size() == want


@pytest.mark.parametrize("raw", ["many", "-1", "1.5"])
def test_bad_cache_size_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("TETHER_VLLM_GRAMMAR_CACHE", raw)
    with pytest.raises(ValueError, match="TETHER_VLLM_GRAMMAR_CACHE"):
        grammar_cache_size()


def test_least_recently_used_is_dropped_and_zero_keeps_nothing(llama3_vocab: tether.Vocabulary) -> None:
    made: list[str] = []

    def make(pattern: str):
        def f() -> tether.Grammar:
            made.append(pattern)
            return regex_grammar(pattern, llama3_vocab)
        return f

    c: LRUCache[tether.Grammar] = LRUCache(2)
    a = c.get_or_make("a", make("a+"))
    assert c.get_or_make("a", make("a+")) is a
    c.get_or_make("b", make("b+"))
    c.get_or_make("a", make("a+"))  # a is now the most recent
    c.get_or_make("c", make("c+"))  # drops b
    assert c.get_or_make("a", make("a+")) is a
    c.get_or_make("b", make("b+"))
    assert made == ["a+", "b+", "c+", "b+"]
    assert (c.hits, c.misses, len(c)) == (3, 4, 2)
    # a cached grammar serves several matchers, each with its own state
    m1, m2 = a.matcher(), a.matcher()
    m1.accept_text("aa")
    assert m2.accepts("a") and not m2.accepts("b")

    off: LRUCache[tether.Grammar] = LRUCache(0)
    assert off.get_or_make("a", make("a+")) is not off.get_or_make("a", make("a+"))
    assert len(off) == 0


def test_concurrent_callers_share_one_value(llama3_vocab: tether.Vocabulary) -> None:
    c: LRUCache[tether.Grammar] = LRUCache(8)
    got: list[tether.Grammar] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        g = c.get_or_make(i % 4, lambda: regex_grammar(f"x{i % 4}[0-9]+", llama3_vocab))
        with lock:
            got.append(g)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(got) == 32
    assert len(c) == 4
    stored = {k: c.get_or_make(k, lambda: pytest.fail("cached")) for k in range(4)}
    for k, g in stored.items():  # the stored grammar is key k's, and serves its language
        assert g.matcher().accepts(f"x{k}5") and not g.matcher().accepts(f"x{(k + 1) % 4}5")
