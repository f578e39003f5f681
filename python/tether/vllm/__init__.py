"""tether inside vLLM: a structured-output backend and a custom logits processor.

Two routes, both exact (a token is allowed iff the grammar accepts it; the request's own
stop tokens exactly when the grammar can end):

1. **The structured-output backend** ``"tether"``. Installing tether registers it through
   the ``vllm.general_plugins`` entry point, so vLLM (offline ``LLM``, ``vllm serve``, every
   worker process) finds it by name. It serves ``json`` (and ``response_format``
   json_schema / json_object), ``regex``, ``grammar`` (GBNF) and ``choice`` requests, rolls
   back for speculative decoding, fills a whole batch's bitmasks in one Go call, and
   refuses what it cannot serve exactly (Lark grammars, structural tags, JSON Schema
   keywords it cannot enforce) with a clear 400-style error::

       import os
       os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
       import tether.vllm  # registers "tether" here (the entry point does it in vLLM's processes)
       from vllm import LLM, SamplingParams
       from vllm.sampling_params import StructuredOutputsParams
       llm = LLM(model_dir, structured_outputs_config={"backend": "tether"})
       params = SamplingParams(max_tokens=64,
                               structured_outputs=StructuredOutputsParams(json=schema))
       print(llm.generate(["A user as JSON:"], params)[0].outputs[0].text)

2. **A custom logits processor**, :class:`TetherLogitsProcessor`, for vLLM's per-request
   ``extra_args`` route, next to any structured-output backend::

       llm = LLM(model_dir, logits_processors=[tether.vllm.TetherLogitsProcessor])
       params = SamplingParams(extra_args={"tether": {"json": schema}})  # or regex / grammar / choice

``import tether.vllm`` registers the backend in the importing process (vLLM's offline
``LLM`` validates its config before it loads plugins, so import this module first);
it needs vLLM installed. ``import tether`` never imports vLLM, and tether does not
depend on it.
"""

from __future__ import annotations

from typing import Any

from .plugin import register
from .spec import SPEC_KEYS, grammar_text

try:
    import vllm as _vllm  # noqa: F401
except ImportError as exc:  # pragma: no cover - only without vLLM
    raise ImportError(f"tether.vllm needs vLLM installed ({exc})") from exc
register()

_LAZY = {
    "TetherBackend": "backend",
    "TetherGrammar": "backend",
    "TetherLogitsProcessor": "logits_processor",
}


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'tether.vllm' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)


__all__ = ["SPEC_KEYS", "TetherBackend", "TetherGrammar", "TetherLogitsProcessor", "grammar_text", "register"]
