"""A Hugging Face tokenizer loaded into tether's Go core."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._errors import TokenizerError
from ._native_call import call, native


class Tokenizer:
    """A tokenizer.json loaded into the Go core (Rust HF tokenizers through cgo).

    Encoding gives the same ids as the ``tokenizers`` package on the same file.

    >>> import tether, pathlib, os
    >>> path = pathlib.Path(os.environ.get("TETHER_TOKENIZERS", "build/tokenizers")) / "llama3/tokenizer.json"
    >>> with tether.Tokenizer.from_file(path) as tok:
    ...     ids = tok.encode("Hello, world!")
    ...     ids, tok.decode(ids)
    ([9906, 11, 1917, 0], 'Hello, world!')
    """

    def __init__(self, handle: int) -> None:
        """Wrap a handle from the extension; use :meth:`from_file`, :meth:`from_json`
        or :meth:`from_hf` instead."""
        self._handle = handle
        self.vocab_size: int = call(native.bindings_TokenizerVocabSize, handle, error=TokenizerError)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Load a tokenizer.json file."""
        return cls(call(native.bindings_TokenizerFromFile, os.fspath(path), error=TokenizerError))

    @classmethod
    def from_json(cls, text: str) -> Tokenizer:
        """Load a tokenizer from the text of a tokenizer.json."""
        return cls(call(native.bindings_TokenizerFromJSON, text, error=TokenizerError))

    @classmethod
    def from_hf(cls, tokenizer: Any) -> Tokenizer:
        """Load the tokenizer behind a transformers fast tokenizer (or a ``tokenizers.Tokenizer``)."""
        backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
        to_str = getattr(backend, "to_str", None)
        if to_str is None:
            raise TokenizerError(
                f"{type(tokenizer).__name__} has no tokenizer.json behind it; "
                "tether needs a fast (Rust-backed) Hugging Face tokenizer"
            )
        return cls.from_json(to_str())

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """Encode text into token ids (``add_special_tokens`` adds e.g. a BOS token)."""
        h = self._live()
        nul = text.find("\x00")
        if nul >= 0:
            raise TokenizerError(
                f"text contains a NUL character at index {nul}, which the Rust tokenizer "
                "interface (C strings) cannot take"
            )
        # A token covers at least one byte, so bytes + a few specials always suffice;
        # the Go side reports the real count when the buffer is too small anyway.
        cap = len(text.encode("utf-8", "surrogatepass")) + 16
        while True:
            buf = np.empty(cap, dtype=np.uint32)
            n = call(
                native.bindings_TokenizerEncode, h, text, add_special_tokens, buf.ctypes.data, cap,
                error=TokenizerError,
            )
            if n <= cap:
                return buf[:n].tolist()
            cap = n

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """Decode token ids into text."""
        h = self._live()
        arr = np.ascontiguousarray(np.asarray(ids, dtype=np.int64))
        if arr.ndim != 1:
            raise TokenizerError(f"decode takes a flat sequence of ids, got shape {arr.shape}")
        bad = np.flatnonzero((arr < 0) | (arr >= self.vocab_size))
        if bad.size:
            i = int(bad[0])
            raise TokenizerError(
                f"token id {int(arr[i])} at position {i} is outside the vocabulary (size {self.vocab_size})"
            )
        ids32 = arr.astype(np.uint32)
        if ids32.size == 0:
            return ""
        return call(
            native.bindings_TokenizerDecode, h, ids32.ctypes.data, int(ids32.size), skip_special_tokens,
            error=TokenizerError,
        )

    def close(self) -> None:
        """Free the Go and Rust side; later calls raise TokenizerError."""
        if self._handle:
            h, self._handle = self._handle, 0
            call(native.bindings_TokenizerClose, h, error=TokenizerError)

    def _live(self) -> int:
        if not self._handle:
            raise TokenizerError("tokenizer is closed")
        return self._handle

    def __enter__(self) -> Tokenizer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "closed" if not self._handle else f"vocab_size={self.vocab_size}"
        return f"<tether.Tokenizer {state}>"
