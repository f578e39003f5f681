"""A vLLM custom logits processor that constrains requests which ask for it with
``SamplingParams(extra_args={"tether": {<kind>: <value>}})``, kind one of
:data:`tether.vllm.SPEC_KEYS` (``{"json": schema}``, ``{"regex": r"..."}``,
``{"grammar": gbnf}``, ``{"choice": [...]}``); ``"whitespace"`` may ride along for
JSON ("bounded", "compact", "flexible"). Other requests pass untouched.

Pass the class to vLLM: ``LLM(model, logits_processors=[TetherLogitsProcessor])``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from vllm.sampling_params import SamplingParams
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor
from vllm.v1.sample.logits_processor.builtin import process_dict_updates

from .._errors import TetherError
from ..bitmask import allocate_token_bitmask, fill_next_token_bitmasks, unpack_token_bitmask
from ..grammar import DEFAULT_WHITESPACE, Grammar, Matcher
from .backend import VocabularyCache
from .spec import SPEC_KEYS, grammar_text


def _spec(params: SamplingParams) -> tuple[str, Any, str] | None:
    """(kind, value, whitespace) of a request's tether spec, None without one; ValueError
    (vLLM turns it into a validation error, HTTP 400 online) when it is malformed."""
    extra = params.extra_args or {}
    spec = extra.get("tether")
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise ValueError(f'extra_args["tether"] must be an object such as {{"json": schema}}, not {type(spec).__name__}')
    kinds = [k for k in SPEC_KEYS if k in spec]
    unknown = sorted(set(spec) - set(SPEC_KEYS) - {"whitespace"})
    if unknown or len(kinds) != 1:
        raise ValueError(
            f'extra_args["tether"] takes exactly one of {", ".join(SPEC_KEYS)} (and optionally '
            f"whitespace), got {sorted(spec)}"
        )
    ws = spec.get("whitespace", DEFAULT_WHITESPACE)
    return kinds[0], spec[kinds[0]], ws


class _Row:
    __slots__ = ("matcher", "out", "done")

    def __init__(self, matcher: Matcher, out: list[int]) -> None:
        self.matcher = matcher
        self.out = out  # vLLM's live list of the request's output tokens
        self.done = 0  # how many of them the matcher has accepted


class TetherLogitsProcessor(LogitsProcessor):
    """Masks the logits of requests with ``extra_args["tether"]`` to their grammar (one
    Go call per step for all of them); the request's stop tokens are allowed exactly when
    its grammar can end."""

    def __init__(self, vllm_config: Any, device: torch.device, is_pin_memory: bool) -> None:
        self.vllm_config = vllm_config
        self.device = device
        self.pin = is_pin_memory
        self.vocab_size = vllm_config.model_config.get_vocab_size()
        self._vocabs: VocabularyCache | None = None
        self.rows: dict[int, _Row] = {}
        self._mask: torch.Tensor | None = None

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        s = _spec(sampling_params)
        if s is None:
            return
        kind, value, ws = s
        try:
            grammar_text(kind, value, whitespace=ws)
        except (TetherError, ValueError) as e:
            raise ValueError(f'extra_args["tether"]: {e}') from None

    def is_argmax_invariant(self) -> bool:
        return False  # masking changes the argmax

    def _vocab_cache(self) -> VocabularyCache:
        if self._vocabs is None:
            from vllm.tokenizers import cached_tokenizer_from_config

            self._vocabs = VocabularyCache(cached_tokenizer_from_config(model_config=self.vllm_config.model_config))
        return self._vocabs

    def _new_row(self, params: SamplingParams, _prompt: list[int] | None, out: list[int]) -> _Row | None:
        s = _spec(params)
        if s is None:
            return None
        kind, value, ws = s
        vocab = self._vocab_cache().get(params.all_stop_token_ids)
        return _Row(Grammar(grammar_text(kind, value, whitespace=ws), vocab).matcher(), out)

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        process_dict_updates(self.rows, batch_update, self._new_row)
        for row in self.rows.values():
            new = row.out[row.done :]
            if new and not row.matcher.is_terminated():
                for t in new:
                    row.matcher.accept_token(t)  # allowed by our own mask
                    if row.matcher.is_terminated():
                        break
            row.done = len(row.out)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        if not self.rows:
            return logits
        live = [(i, r.matcher) for i, r in sorted(self.rows.items()) if not r.matcher.is_terminated()]
        if not live:
            return logits
        n, width = len(live), logits.shape[-1]
        if self._mask is None or self._mask.shape[0] < n or self._mask.shape[1] != (width + 31) // 32:
            self._mask = allocate_token_bitmask(max(n, 8), width, torch=True)
            if self.pin and torch.cuda.is_available():
                self._mask = self._mask.pin_memory()
        mask = self._mask[:n]
        fill_next_token_bitmasks([m for _, m in live], mask)
        allowed = unpack_token_bitmask(mask.to(logits.device, non_blocking=True), width)
        idx = torch.tensor([i for i, _ in live], device=logits.device)
        logits[idx] = logits[idx].masked_fill(~allowed, float("-inf"))
        return logits
