"""Calling the gopy extension: every Go error becomes one of tether's exceptions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import json

from ._errors import GrammarError, GrammarLimitError, InternalError, SchemaError, TetherError, TokenizerError

T = TypeVar("T")

try:
    from ._native import _native as native  # the gopy-built module: bindings_<Name> functions
except ImportError as exc:  # pragma: no cover - only when the extension was not built
    raise ImportError(
        "tether's Go extension (tether._native) is missing or does not load: "
        f"{exc}. Build it with `make setup` in a checkout, or `pip install .`."
    ) from exc



def _load_fast() -> Any:
    """The per-token calls with METH_FASTCALL (bindings/_fastpath, linked into the same
    extension): accept_fill, fill_count, accept_token. Fetched once through ctypes."""
    import ctypes

    lib = ctypes.PyDLL(native.__file__)  # the loaded extension; PyDLL keeps the GIL held
    init = lib.tether_fastpath_module
    init.restype, init.argtypes = ctypes.py_object, []
    return init()


fast = _load_fast()

_INTERNAL_PREFIX = "tether internal error"
# Errors with structure (a grammar's line and column, a schema's keyword and pointer)
# come from bindings/ as this prefix followed by a JSON object.
_STRUCTURED_PREFIX = "tether-error:"


def _structured(msg: str) -> TetherError | None:
    if not msg.startswith(_STRUCTURED_PREFIX):
        return None
    try:
        e = json.loads(msg[len(_STRUCTURED_PREFIX):])
    except ValueError:
        return None
    kind, text = e.get("kind"), e.get("message", msg)
    if kind == "grammar":
        return GrammarError(text, e.get("line"), e.get("col"))
    if kind == "schema":
        return SchemaError(text, e.get("keyword"), e.get("pointer"))
    if kind == "tokenizer":
        return TokenizerError(text)
    if kind == "limit":
        return GrammarLimitError(text)
    if kind == "dead_end":
        return GrammarError(text)
    return None


def call(fn: Callable[..., T], *args: Any, error: type[TetherError]) -> T:
    """Call a function of the extension; map gopy's RuntimeError to ``error``
    (or to InternalError when Go recovered from a panic)."""
    try:
        return fn(*args)
    except (RuntimeError, ValueError, UnicodeError, OverflowError) as exc:
        raise translate(exc, fn, error) from None


def translate(exc: Exception, fn: Callable[..., Any], error: type[TetherError]) -> TetherError:
    """The tether exception for an exception a call of the extension's fn raised:
    gopy's RuntimeError carries Go's error (InternalError when Go recovered from a panic,
    a structured error's own type, else ``error``); ValueError, UnicodeError and
    OverflowError come from the extension's argument conversion before Go runs, e.g. a
    str with lone surrogates (not encodable as UTF-8) or an int out of range."""
    if isinstance(exc, RuntimeError):
        msg = str(exc)
        if msg.startswith(_INTERNAL_PREFIX):
            return InternalError(msg)
        structured = _structured(msg)
        if structured is not None:
            return structured
        return error(msg)
    return error(f"{getattr(fn, '__name__', 'call')}: bad argument: {exc}")
