"""The "tether" structured-output backend for vLLM (v1 engine).

vLLM drives it through ``StructuredOutputBackend`` / ``StructuredOutputGrammar``
(vllm/v1/structured_output/backend_types.py): one backend per engine, one grammar per
request. The plugin (plugin.py) makes vLLM pick it by name.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Any

import torch
from vllm.v1.structured_output.backend_types import (
    StructuredOutputBackend,
    StructuredOutputGrammar,
    StructuredOutputOptions,
)

from .._errors import GrammarError
from ..bitmask import bitmask_words
from ..grammar import Grammar, Matcher, Vocabulary
from .._lru import LRUCache, grammar_cache_size
from .spec import grammar_text

logger = logging.getLogger("tether.vllm")

_KINDS = {
    StructuredOutputOptions.JSON: "json",
    StructuredOutputOptions.JSON_OBJECT: "json_object",
    StructuredOutputOptions.REGEX: "regex",
    StructuredOutputOptions.GRAMMAR: "grammar",
    StructuredOutputOptions.CHOICE: "choice",
}


def request_kind(request_type: StructuredOutputOptions) -> str:
    """The tether spec key of a vLLM request type; GrammarError for one tether refuses."""
    kind = _KINDS.get(request_type)
    if kind is None:
        raise GrammarError(
            f"the tether backend does not serve {request_type.name.lower()} requests "
            f"(it serves json, json_object, regex, grammar and choice)"
        )
    return kind


def whitespace_from_env() -> str:
    """The JSON whitespace ``TETHER_VLLM_WHITESPACE`` names (default "bounded")."""
    ws = os.environ.get("TETHER_VLLM_WHITESPACE", "").strip() or "bounded"
    if ws not in ("bounded", "flexible", "compact"):
        raise ValueError(f"TETHER_VLLM_WHITESPACE={ws!r}: want bounded, flexible or compact")
    return ws


def default_stop_ids(tokenizer: Any) -> list[int]:
    eos = getattr(tokenizer, "eos_token_id", None)
    if eos is None:
        raise GrammarError("the request has no stop tokens and the tokenizer no eos_token_id")
    return [int(eos)]


class VocabularyCache:
    """One tether Vocabulary per set of stop tokens (a request ends exactly on its own)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._lock = threading.Lock()
        self._by_stops: dict[tuple[int, ...], Vocabulary] = {}

    def get(self, stop_token_ids: Any) -> Vocabulary:
        stops = tuple(sorted(int(t) for t in (stop_token_ids or ()))) or tuple(default_stop_ids(self.tokenizer))
        with self._lock:
            v = self._by_stops.get(stops)
            if v is None:
                v = Vocabulary.from_hf(self.tokenizer, eos_token_id=list(stops))
                self._by_stops[stops] = v
            return v


@dataclass
class TetherBackend(StructuredOutputBackend):
    """Compiles requests with tether's Go core. JSON whitespace follows the engine's
    ``disable_any_whitespace`` ("compact"), else ``TETHER_VLLM_WHITESPACE`` ("bounded",
    tether's default: one space or up to two newlines and 20 spaces, so a model cannot
    loop on whitespace; "flexible": JSON's own whitespace, any amount, what xgrammar's
    and guidance's ``any_whitespace`` allow; or "compact").

    Compiled grammars are kept by request (kind, spec, whitespace, stop tokens) in an LRU
    cache of ``TETHER_VLLM_GRAMMAR_CACHE`` entries (default 64; 0: off), as vLLM keeps
    xgrammar's: a repeated schema starts its matcher at once, and from the token sets
    its earlier requests' matchers computed (a compiled grammar is shared by matchers,
    safe for concurrent use)."""

    def __post_init__(self) -> None:
        cfg = getattr(self.vllm_config, "structured_outputs_config", None)
        self.whitespace = "compact" if getattr(cfg, "disable_any_whitespace", False) else whitespace_from_env()
        self.vocabs = VocabularyCache(self.tokenizer)
        self.grammars: LRUCache[Grammar] = LRUCache(grammar_cache_size())

    def compile_grammar(
        self,
        request_type: StructuredOutputOptions,
        grammar_spec: str,
        stop_token_ids: set[int] | None = None,
    ) -> StructuredOutputGrammar:
        kind = request_kind(request_type)
        vocab = self.vocabs.get(stop_token_ids)
        if self.vocab_size < vocab.size:
            raise GrammarError(
                f"the model's vocabulary ({self.vocab_size}) is smaller than its tokenizer's ({vocab.size})"
            )
        # The cached grammar holds its vocabulary, which VocabularyCache keeps for the
        # backend's life: id(vocab) names one set of stop tokens while the entry lives.
        spec = grammar_spec if isinstance(grammar_spec, str) else json.dumps(grammar_spec, sort_keys=True)
        key = (kind, spec, self.whitespace, id(vocab))
        grammar = self.grammars.get_or_make(
            key, lambda: Grammar(grammar_text(kind, grammar_spec, whitespace=self.whitespace), vocab)
        )
        return TetherGrammar(matcher=grammar.matcher(), vocab_size=self.vocab_size)

    def allocate_token_bitmask(self, max_num_seqs: int) -> torch.Tensor:
        return torch.full((max_num_seqs, bitmask_words(self.vocab_size)), -1, dtype=torch.int32)

    def destroy(self) -> None:
        self.grammars.clear()
        self.vocabs = VocabularyCache(self.tokenizer)


@dataclass
class TetherGrammar(StructuredOutputGrammar):
    """One request's grammar state: a tether Matcher."""

    matcher: Matcher = field(hash=False)
    vocab_size: int
    num_processed_tokens: int = field(default=0, repr=False, hash=False)

    def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
        """Advance by tokens; False (state as before the refused token) when the grammar
        refuses one. Tokens after the terminating stop token are ignored. A limit the
        engine hits raises tether.GrammarLimitError: that is not the grammar's verdict."""
        if self.matcher.is_terminated():
            return True
        for t in tokens:
            try:
                self.matcher.accept_token(t)
            except GrammarError as e:
                logger.error("tether: request %s: token %s refused: %s", request_id, t, e)
                return False
            self.num_processed_tokens += 1
            if self.matcher.is_terminated():
                break
        return True

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        """The longest prefix of tokens the grammar accepts; the state is unchanged."""
        if self.matcher.is_terminated():
            return []
        accepted: list[int] = []
        for t in tokens:
            try:
                self.matcher.accept_token(t)
            except GrammarError:
                break
            accepted.append(t)
            if self.matcher.is_terminated():
                break
        if accepted:
            self.matcher.rollback(len(accepted))
        return accepted

    def rollback(self, num_tokens: int) -> None:
        self.matcher.rollback(num_tokens)
        self.num_processed_tokens -= num_tokens

    def fill_bitmask(self, bitmask: torch.Tensor, idx: int) -> None:
        self.matcher.fill_next_token_bitmask(bitmask, idx)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def reset(self) -> None:
        self.matcher.reset()
        self.num_processed_tokens = 0
