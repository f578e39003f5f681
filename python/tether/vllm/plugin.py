"""Registers the "tether" structured-output backend with vLLM.

vLLM has no registry of structured-output backends: the name is a ``Literal`` of the
config class, requests are validated in ``SamplingParams._validate_structured_outputs``
and the backend object is made in ``StructuredOutputManager.grammar_init``, each an
if/else over the built-in names. ``register`` (the ``vllm.general_plugins`` entry point,
run by vLLM in every process it starts) extends those three places for "tether" and
leaves every other backend's path as it was. It is idempotent.
"""

from __future__ import annotations

import threading
import typing
from typing import Any

BACKEND = "tether"
_lock = threading.Lock()
_done = False


def _allow_name() -> None:
    """Let StructuredOutputsConfig(backend="tether") validate."""
    from pydantic.dataclasses import rebuild_dataclass
    from vllm.config import structured_outputs as so

    cls = so.StructuredOutputsConfig
    names = typing.get_args(so.StructuredOutputsBackend)
    if BACKEND in names:
        return
    lit = typing.Literal[(*names, BACKEND)]  # type: ignore[valid-type]
    so.StructuredOutputsBackend = lit  # type: ignore[misc]
    # pydantic rebuilds the validator from the dataclass field's type.
    cls.__annotations__["backend"] = lit
    cls.__dataclass_fields__["backend"].type = lit
    cls.__pydantic_fields__["backend"].annotation = lit
    rebuild_dataclass(cls, force=True)


def _validate(params: Any, tokenizer: Any) -> None:
    """What vLLM's own validation does for a backend: refuse what cannot be served
    (VLLMValidationError: HTTP 400 online), mark the request for the backend."""
    from vllm.exceptions import VLLMValidationError

    from .._errors import TetherError
    from ..grammar import Grammar
    from .backend import VocabularyCache, request_kind
    from .spec import grammar_text

    so = params.structured_outputs
    so._backend = BACKEND
    try:
        from vllm.v1.structured_output.request import get_structured_output_key

        request_type, spec = get_structured_output_key(so)
        text = grammar_text(request_kind(request_type), spec)
        cache = _vocab_cache(tokenizer, VocabularyCache)
        Grammar(text, cache.get(params.all_stop_token_ids))
    except TetherError as e:
        raise VLLMValidationError(f"tether backend: {e}") from None
    except ValueError as e:  # malformed JSON in the request
        raise VLLMValidationError(f"tether backend: {e}") from None
    so.__post_init__()


_caches: dict[int, Any] = {}


def _vocab_cache(tokenizer: Any, cls: Any) -> Any:
    c = _caches.get(id(tokenizer))
    if c is None or c.tokenizer is not tokenizer:
        c = _caches[id(tokenizer)] = cls(tokenizer)
    return c


def _patch_validation() -> None:
    from vllm.sampling_params import SamplingParams

    orig = SamplingParams._validate_structured_outputs
    if getattr(orig, "_tether", False):
        return

    def _validate_structured_outputs(self: Any, model_config: Any, structured_outputs_config: Any, tokenizer: Any) -> None:
        if (
            structured_outputs_config is not None
            and self.structured_outputs is not None
            and structured_outputs_config.backend == BACKEND
            and not getattr(model_config, "is_diffusion", False)
            and tokenizer is not None
        ):
            requested = self.structured_outputs._backend
            if requested and requested != BACKEND:
                from vllm.exceptions import VLLMValidationError

                raise VLLMValidationError(
                    "Request-level structured output backend selection is not supported. The "
                    f"request specified '{requested}', but vLLM was initialised with '{BACKEND}'."
                )
            _validate(self, tokenizer)
            return
        orig(self, model_config, structured_outputs_config, tokenizer)

    _validate_structured_outputs._tether = True  # type: ignore[attr-defined]
    SamplingParams._validate_structured_outputs = _validate_structured_outputs  # type: ignore[method-assign]


def _patch_manager() -> None:
    from vllm.v1.structured_output import StructuredOutputManager

    orig_init = StructuredOutputManager.grammar_init
    if getattr(orig_init, "_tether", False):
        return
    orig_fill = StructuredOutputManager._fill_bitmasks

    def grammar_init(self: Any, request: Any) -> None:
        so = getattr(request.sampling_params, "structured_outputs", None)
        if self.backend is None and so is not None and so._backend == BACKEND:
            from .backend import TetherBackend

            self.backend = TetherBackend(
                self.vllm_config,
                tokenizer=self.tokenizer,
                vocab_size=self.vllm_config.model_config.get_vocab_size(),
            )
        orig_init(self, request)

    def _fill_bitmasks(self: Any, batch: Any) -> None:
        from .backend import TetherBackend, TetherGrammar

        if not isinstance(self.backend, TetherBackend):
            return orig_fill(self, batch)
        if len(batch) == 1:
            # vLLM's serial path (batches below its parallel threshold): one row, through
            # the matcher's own fill, which skips the batch call's argument arrays.
            grammar, index, apply_bitmask = batch[0]
            if apply_bitmask and not grammar.is_terminated():
                grammar.fill_bitmask(self._grammar_bitmask, index)
            else:
                self._grammar_bitmask[index].fill_(self._full_mask)
            return None
        # One Go call for the whole batch, rows in parallel, GIL released.
        from ..bitmask import fill_next_token_bitmasks

        matchers, rows = [], []
        for grammar, index, apply_bitmask in batch:
            if apply_bitmask and isinstance(grammar, TetherGrammar) and not grammar.is_terminated():
                matchers.append(grammar.matcher)
                rows.append(index)
            elif apply_bitmask and not grammar.is_terminated():
                grammar.fill_bitmask(self._grammar_bitmask, index)
            else:
                self._grammar_bitmask[index].fill_(self._full_mask)
        if matchers:
            fill_next_token_bitmasks(matchers, self._grammar_bitmask, rows)
        return None

    grammar_init._tether = True  # type: ignore[attr-defined]
    StructuredOutputManager.grammar_init = grammar_init  # type: ignore[method-assign]
    StructuredOutputManager._fill_bitmasks = _fill_bitmasks  # type: ignore[method-assign]


def register() -> None:
    """Make ``structured_outputs_config={"backend": "tether"}`` work in this process.
    vLLM calls it through the ``vllm.general_plugins`` entry point; calling it again is
    harmless."""
    global _done
    with _lock:
        if _done:
            return
        _allow_name()
        _patch_validation()
        _patch_manager()
        _done = True
