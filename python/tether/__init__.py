"""tether: grammar-constrained decoding with a Go core.

The Go core (a GBNF grammar engine, JSON Schema and regex front ends and llama.cpp's
sampler chain) is exposed to Python through a gopy extension, ``tether._native``.

``import tether`` needs neither torch nor transformers: the logits processors (and with
them torch and transformers) are imported the first time one of them is used.

>>> import tether
>>> tether.__version__
'0.1.0'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors import GrammarError, GrammarLimitError, InternalError, SchemaError, TetherError, TokenizerError
from ._native_call import native as _native
from .grammar import (
    DEFAULT_WHITESPACE,
    Grammar,
    Matcher,
    Triggers,
    Vocabulary,
    allowed_token_ids,
    json_schema_to_gbnf,
    regex_to_gbnf,
)
from .bitmask import allocate_token_bitmask, apply_token_bitmask, fill_next_token_bitmasks, unpack_token_bitmask
from .sampling import ParamError, SamplerChain
from .tokenizer import Tokenizer

if TYPE_CHECKING:  # pragma: no cover
    from .processors import GrammarLogitsProcessor, JSONSchemaLogitsProcessor, RegexLogitsProcessor
    from .sampling_processor import SamplingLogitsProcessor

__version__: str = _native.bindings_Version()

_LAZY = {"GrammarLogitsProcessor", "JSONSchemaLogitsProcessor", "RegexLogitsProcessor", "SamplingLogitsProcessor"}


def __getattr__(name: str) -> Any:
    # PEP 562: the processors import torch and transformers, so they load on first use.
    if name == "SamplingLogitsProcessor":
        from .sampling_processor import SamplingLogitsProcessor

        return SamplingLogitsProcessor
    if name in _LAZY:
        from . import processors

        return getattr(processors, name)
    raise AttributeError(f"module 'tether' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY)


__all__ = [
    "DEFAULT_WHITESPACE",
    "Grammar",
    "GrammarError",
    "GrammarLimitError",
    "GrammarLogitsProcessor",
    "InternalError",
    "JSONSchemaLogitsProcessor",
    "Matcher",
    "ParamError",
    "RegexLogitsProcessor",
    "SamplerChain",
    "SamplingLogitsProcessor",
    "SchemaError",
    "TetherError",
    "Tokenizer",
    "TokenizerError",
    "Triggers",
    "Vocabulary",
    "__version__",
    "allocate_token_bitmask",
    "allowed_token_ids",
    "apply_token_bitmask",
    "fill_next_token_bitmasks",
    "json_schema_to_gbnf",
    "regex_to_gbnf",
    "unpack_token_bitmask",
]
