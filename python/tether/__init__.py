"""tether: grammar-constrained decoding with a Go core.

The Go core (a GBNF grammar engine, JSON Schema and regex front ends and llama.cpp's
sampler chain) is exposed to Python through a gopy extension, ``tether._native``.

>>> import tether
>>> tether.__version__
'0.1.0'
"""

from __future__ import annotations

from ._errors import GrammarError, InternalError, SchemaError, TetherError, TokenizerError
from ._native_call import native as _native
from .processors import (
    Grammar,
    GrammarLogitsProcessor,
    JSONSchemaLogitsProcessor,
    Matcher,
    RegexLogitsProcessor,
    Triggers,
    Vocabulary,
    allowed_token_ids,
    json_schema_to_gbnf,
    regex_to_gbnf,
)
from .sampling import ParamError, SamplerChain, SamplingLogitsProcessor
from .tokenizer import Tokenizer

__version__: str = _native.bindings_Version()

__all__ = [
    "Grammar",
    "GrammarError",
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
    "allowed_token_ids",
    "json_schema_to_gbnf",
    "regex_to_gbnf",
]
