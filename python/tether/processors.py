"""transformers logits processors that constrain generation with tether's Go core."""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._errors import GrammarError, SchemaError, TetherError, TokenizerError
from ._native_call import call, native

try:  # transformers is optional: without it the processors still work as callables
    from transformers import LogitsProcessor as _LogitsProcessorBase
except ImportError:  # pragma: no cover
    _LogitsProcessorBase = object  # type: ignore[assignment,misc]


def _release(obj: Any, close: Any) -> None:
    """Close obj's native handle once; safe in __del__ (never raises)."""
    h, obj._handle = getattr(obj, "_handle", 0), 0
    if h:
        try:
            close(h)
        except Exception:
            pass


@dataclass(frozen=True)
class Triggers:
    """When a lazy grammar wakes up. Until then the processor masks nothing.

    - ``words``: substrings of the generated text; the grammar then describes the output
      from the start of the word on (the word is part of the constrained text).
    - ``tokens``: token ids, with the same meaning.
    - ``patterns``: regular expressions (Go RE2 syntax) searched in the generated text;
      the first capture group, if any, marks where constrained text begins.
    - ``patterns_at_start``: like ``patterns`` but only matching at the start of the output.
    - ``after``: a marker such as ``"</think>"``; the grammar applies to the text after it.
    """

    words: Sequence[str] = field(default_factory=tuple)
    tokens: Sequence[int] = field(default_factory=tuple)
    patterns: Sequence[str] = field(default_factory=tuple)
    patterns_at_start: Sequence[str] = field(default_factory=tuple)
    after: str | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "words": list(self.words),
                "tokens": [int(t) for t in self.tokens],
                "patterns": list(self.patterns),
                "patterns_at_start": list(self.patterns_at_start),
                "after": self.after or "",
            }
        )


class Vocabulary:
    """A tokenizer's vocabulary as the Go core sees it: exact bytes per token, special
    tokens, end-of-generation tokens. Built once per tokenizer and shared."""

    _cache: dict[str, Vocabulary] = {}
    # Per tokenizer object, so a processor made per request does not serialize and hash
    # the tokenizer.json again; keyed by length too, as add_tokens changes a tokenizer.
    _by_object: weakref.WeakKeyDictionary[Any, dict[tuple[int, str], Vocabulary]] = weakref.WeakKeyDictionary()
    _lock = threading.Lock()

    def __init__(self, handle: int, eog: list[int]) -> None:
        self._handle = handle
        self.eog_token_ids = eog

    @classmethod
    def from_hf(cls, tokenizer: Any, eos_token_id: int | Iterable[int] | None = None) -> Vocabulary:
        """The vocabulary of a transformers fast tokenizer (its tokenizer.json goes to Go).

        End-of-generation tokens: the tokenizer's EOS, the eot-style tokens tether knows
        (``<|eot_id|>``, ``<|im_end|>``, ``<end_of_turn>``, ...) and ``eos_token_id``
        (e.g. from ``model.generation_config.eos_token_id``)."""
        extra: list[int] = []
        if eos_token_id is not None:
            extra = [int(eos_token_id)] if isinstance(eos_token_id, int) else [int(i) for i in eos_token_id]
        obj_key = (len(tokenizer) if hasattr(tokenizer, "__len__") else -1, json.dumps(extra))
        try:
            hit = cls._by_object.get(tokenizer, {}).get(obj_key)
        except TypeError:  # not weak-referenceable
            hit = None
        if hit is not None:
            return hit
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None or not hasattr(backend, "to_str"):
            raise TokenizerError(
                f"{type(tokenizer).__name__} is not a fast tokenizer: tether needs the "
                "tokenizer.json behind a transformers *TokenizerFast (use_fast=True)"
            )
        tok_json = backend.to_str()
        config: dict[str, Any] = {}
        eos = getattr(tokenizer, "eos_token", None)
        if isinstance(eos, str):
            config["eos_token"] = eos
        key = hashlib.sha256(
            tok_json.encode("utf-8", "surrogatepass") + json.dumps([config, extra]).encode()
        ).hexdigest()
        with cls._lock:
            v = cls._cache.get(key)
            if v is None:
                h = call(
                    native.bindings_VocabFromJSON, tok_json, json.dumps(config), json.dumps(extra),
                    error=TokenizerError,
                )
                eog = json.loads(call(native.bindings_VocabEOG, h, error=TokenizerError))
                v = cls(h, eog)
                cls._cache[key] = v
            try:
                cls._by_object.setdefault(tokenizer, {})[obj_key] = v
            except TypeError:
                pass
            return v


class Grammar:
    """A compiled grammar over a vocabulary; immutable and shared by matchers.

    ``dialect="bnf"`` reads bnf_sampler's BNF instead of GBNF (see :meth:`from_bnf`).
    ``root`` defaults to ``"root"`` for GBNF, and for BNF to ``<start>``, else the first
    production.
    """

    def __init__(
        self, vocab: Vocabulary, gbnf: str, root: str | None = None, triggers: Triggers | None = None,
        *, dialect: str = "gbnf",
    ) -> None:
        if root is None:
            root = "root" if dialect == "gbnf" else ""
        self.vocab = vocab
        self.gbnf = gbnf
        self.dialect = dialect
        trig = (triggers or Triggers()).to_json() if triggers else ""
        if dialect == "gbnf":
            self._handle = call(native.bindings_GrammarCompile, vocab._handle, gbnf, root, trig, error=GrammarError)
        else:
            self._handle = call(
                native.bindings_GrammarCompileDialect, vocab._handle, gbnf, root or "", trig, dialect,
                error=GrammarError,
            )

    @classmethod
    def from_bnf(
        cls, vocab: Vocabulary, bnf: str, root: str | None = None, triggers: Triggers | None = None,
    ) -> Grammar:
        """Compile a grammar written in bnf_sampler's BNF dialect.

        ``<name> ::= 'x' | "y" | <other>``; consecutive terminals merge; ``<any!>`` is any
        one token; ``<except!('lit')>`` / ``<except!([rule])>`` is one token without the
        excepted literals (or its part before the first); ``\\xHH`` is a raw byte. The
        start rule is ``root``, else ``<start>``, else the first production. Left
        recursion is rewritten automatically.

        Example (runs with the test tokenizers of a checkout)::

            vocab = tether.Vocabulary.from_hf(tokenizer)
            g = tether.Grammar.from_bnf(vocab, "<start> ::= 'cryscan' <any!>")
            m = g.matcher()
            m.possible_tokens()        # [id of "cry"]: the longest token of the terminal
        """
        return cls(vocab, bnf, root or "", triggers, dialect="bnf")

    def matcher(self) -> Matcher:
        """A new matcher at the start of this grammar."""
        return Matcher(self)

    def __del__(self) -> None:
        _release(self, native.bindings_GrammarClose)


class Matcher:
    """One sequence's position in a grammar: feed it tokens or text, ask what may follow.

    >>> m = grammar.matcher()             # doctest: +SKIP
    >>> m.accept_text('{"a": 1'); m.can_end
    False
    """

    def __init__(self, grammar: Grammar, _handle: int = 0) -> None:
        self.grammar = grammar
        self._handle = _handle or call(native.bindings_MatcherNew, grammar._handle, error=GrammarError)

    def accept_token(self, token_id: int) -> None:
        """Advance by one token; GrammarError says why it is not allowed (state unchanged)."""
        call(native.bindings_MatcherAcceptToken, self._handle, int(token_id), error=GrammarError)

    def accept_text(self, text: str) -> None:
        """Advance by the UTF-8 bytes of text; GrammarError says where it was rejected."""
        call(native.bindings_MatcherAcceptText, self._handle, text, error=GrammarError)

    def accepts(self, text: str) -> bool:
        """Whether text (from the current state) is accepted, leaving this matcher unchanged."""
        m = self.clone()
        try:
            m.accept_text(text)
        except GrammarError:
            return False
        return True

    def allowed_token_ids(self, vocab_size: int | None = None) -> np.ndarray:
        """The token ids allowed next (vocab_size defaults to the tokenizer's)."""
        n = vocab_size or call(native.bindings_VocabSize, self.grammar.vocab._handle, error=TetherError)
        words = np.zeros((n + 31) // 32, dtype=np.uint32)
        call(native.bindings_MatcherFillMask, self._handle, words.ctypes.data, words.size, error=TetherError)
        return allowed_token_ids(words, n)

    def possible_tokens(self, longest_only: bool = True) -> list[int]:
        """The token ids that may come next, in increasing order.

        With ``longest_only`` (bnf_sampler's ``all_possible_tokens`` rule) a token allowed
        by text is left out when a longer allowed token begins with it: the literal
        ``"apple"`` lists ``apple``, not ``a ap app appl``. Tokens allowed by token-level
        elements (``<any!>``, ``<except!>``, ``<[N]>``), end and special tokens are all
        listed. ``longest_only=False`` lists every allowed token.

        >>> m.possible_tokens(longest_only=False)   # doctest: +SKIP
        [64, 391, 680, 680, 23182]
        """
        out = call(native.bindings_MatcherPossibleTokens, self._handle, bool(longest_only), error=GrammarError)
        return json.loads(out)

    def _state(self) -> dict[str, bool]:
        return json.loads(call(native.bindings_MatcherState, self._handle, error=TetherError))

    @property
    def can_end(self) -> bool:
        """Whether the text so far is a complete sentence of the grammar."""
        return self._state()["can_end"]

    @property
    def is_dead(self) -> bool:
        """Whether nothing can follow (the grammar has ended, or input was rejected)."""
        return self._state()["dead"]

    def clone(self) -> Matcher:
        """An independent copy."""
        return Matcher(self.grammar, call(native.bindings_MatcherClone, self._handle, error=TetherError))

    def reset(self) -> None:
        """Back to the start of the grammar."""
        call(native.bindings_MatcherReset, self._handle, error=TetherError)

    def rollback(self, n: int = 1) -> None:
        """Undo the last n accepted tokens."""
        call(native.bindings_MatcherRollback, self._handle, n, error=GrammarError)

    def __del__(self) -> None:
        _release(self, native.bindings_MatcherClose)


def json_schema_to_gbnf(
    schema: Mapping[str, Any] | str | type,
    *,
    whitespace: str = "flexible",
    lenient: bool = False,
    strict_objects: bool = False,
) -> tuple[str, list[str]]:
    """Translate a JSON Schema (a dict, JSON text, or a pydantic model class) to GBNF.

    Returns the grammar and the list of keywords ignored (only with ``lenient=True``;
    otherwise a keyword tether cannot enforce raises :class:`tether.SchemaError`).

    >>> gbnf, ignored = json_schema_to_gbnf({"type": "integer", "minimum": 0, "maximum": 99})
    >>> "root" in gbnf, ignored
    (True, [])
    """
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        schema = schema.model_json_schema()  # pydantic v2 model class
    text = schema if isinstance(schema, str) else json.dumps(schema)
    opts = json.dumps({"whitespace": whitespace, "lenient": lenient, "strict_objects": strict_objects})
    out = json.loads(call(native.bindings_SchemaToGBNF, text, opts, error=SchemaError))
    return out["grammar"], [f"{i['keyword']} at {i['pointer'] or '/'}" for i in out.get("ignored") or []]


def regex_to_gbnf(pattern: str) -> str:
    r"""Translate a regular expression (Go RE2 syntax, matched in full) to GBNF.

    >>> "root" in regex_to_gbnf(r"\d{3}-\d{4}")
    True
    """
    return call(native.bindings_RegexToGBNF, pattern, error=GrammarError)


def _go_dtypes() -> dict[Any, str]:
    try:
        import torch
    except ImportError:  # pragma: no cover
        return {}
    return {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}


_GO_DTYPES = _go_dtypes()


class GrammarLogitsProcessor(_LogitsProcessorBase):
    """Constrain ``model.generate`` to a GBNF grammar.

    One instance serves a whole ``generate`` call in any mode — batches of different
    prompts, ``num_return_sequences``, greedy, sampling and beam search — because each
    row's grammar state is found from the tokens the row holds, not from its position.
    Calling ``generate`` again with new prompts starts over.

    Example (runs with the test tokenizers of a checkout)::

        from transformers import AutoTokenizer, AutoModelForCausalLM
        tok = AutoTokenizer.from_pretrained(model_dir)
        proc = tether.GrammarLogitsProcessor('root ::= "yes" | "no"', tok)
        out = model.generate(**tok("Answer:", return_tensors="pt"), logits_processor=[proc])

    ``dialect="bnf"`` takes a grammar in bnf_sampler's BNF (see :meth:`Grammar.from_bnf`);
    its start rule is then ``<start>`` (or the first production) unless ``root`` names one.

    Disallowed tokens get ``-inf``. End-of-generation tokens are allowed exactly when the
    grammar can end; a row that has ended or that holds a token the grammar rejects (for
    instance because another processor overrode the mask) is only offered end tokens.

    Like transformers' own processors it returns a new tensor. ``inplace=True`` writes into
    the given CPU scores instead, which saves a copy of the row per step; do not combine it
    with ``output_logits=True``, whose raw logits would then show the mask.
    """

    def __init__(
        self,
        grammar: str,
        tokenizer: Any,
        *,
        root: str = "root",
        triggers: Triggers | None = None,
        eos_token_id: int | Iterable[int] | None = None,
        inplace: bool = False,
        dialect: str = "gbnf",
    ) -> None:
        self.inplace = inplace
        self.vocab = Vocabulary.from_hf(tokenizer, eos_token_id)
        if dialect != "gbnf" and root == "root":
            root = ""  # the dialect's own default start rule
        self.grammar = Grammar(self.vocab, grammar, root, triggers, dialect=dialect)
        self._handle = call(native.bindings_ProcessorNew, self.grammar._handle, error=GrammarError)
        self._mask_buf: Any = None
        self._shifts: dict[Any, Any] = {}
        self._lock = threading.Lock()

    @property
    def rejected(self) -> int:
        """How many tokens chosen by generate were not allowed by the grammar so far."""
        return call(native.bindings_ProcessorRejected, self._handle, error=TetherError)

    def reset(self) -> None:
        """Forget all rows; the next call starts a new generation."""
        call(native.bindings_ProcessorReset, self._handle, error=TetherError)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        with self._lock:
            batch, seq_len = input_ids.shape
            ids = input_ids
            if ids.device.type != "cpu" or ids.dtype != torch.int64 or not ids.is_contiguous():
                ids = ids.detach().to(device="cpu", dtype=torch.int64).contiguous()
            vocab_size = scores.shape[-1]
            dtype = _GO_DTYPES.get(scores.dtype)
            if scores.device.type == "cpu" and dtype is not None:
                # CPU: one Go call finds each row's state and copies the row with -inf
                # where masked, in one pass.
                src = scores.contiguous()
                out = src if self.inplace and src is scores else torch.empty_like(src)
                call(
                    native.bindings_ProcessorStepApply, self._handle, ids.data_ptr(), batch, seq_len,
                    src.data_ptr(), out.data_ptr(), vocab_size, dtype, error=TetherError,
                )
                return out
            call(native.bindings_ProcessorStep, self._handle, ids.data_ptr(), batch, seq_len, error=TetherError)
            # GPU (or another dtype): Go fills a CPU bitmask (pinned for CUDA); torch copies
            # it over and applies it, so the scores never leave the device.
            words = (vocab_size + 31) // 32
            buf = self._mask_buffer(batch, words, scores.device)
            call(native.bindings_ProcessorFillMasks, self._handle, buf.data_ptr(), batch, words, error=TetherError)
            allowed = self._unpack(buf.to(scores.device, non_blocking=True), vocab_size)
            return scores.masked_fill(~allowed, float("-inf"))

    def _mask_buffer(self, batch: int, words: int, device: Any) -> Any:
        import torch

        buf = self._mask_buf
        if buf is None or buf.shape[0] < batch or buf.shape[1] != words:
            pin = device.type == "cuda" and torch.cuda.is_available()
            buf = torch.zeros((batch, words), dtype=torch.int32, pin_memory=pin)
            self._mask_buf = buf
        return buf[:batch]

    def _unpack(self, words: Any, vocab_size: int) -> Any:
        import torch

        shifts = self._shifts.get(words.device)
        if shifts is None:
            shifts = torch.arange(32, dtype=torch.int32, device=words.device)
            self._shifts[words.device] = shifts
        bits = (words.unsqueeze(-1) >> shifts) & 1
        return bits.reshape(words.shape[0], -1)[:, :vocab_size].bool()

    def __del__(self) -> None:
        _release(self, native.bindings_ProcessorClose)


class JSONSchemaLogitsProcessor(GrammarLogitsProcessor):
    """Constrain ``model.generate`` to JSON that validates against a JSON Schema.

    ``schema`` is a dict, JSON text, or a pydantic model class. ``whitespace`` is
    ``"flexible"`` (JSON's own rule), ``"compact"`` (none) or ``"bounded"`` (a space or a
    newline with limited indentation, so a model cannot loop on whitespace). A keyword
    tether cannot enforce raises :class:`tether.SchemaError`, unless ``lenient=True``,
    which ignores it and lists it in ``self.ignored``.
    """

    def __init__(
        self,
        schema: Mapping[str, Any] | str | type,
        tokenizer: Any,
        *,
        whitespace: str = "bounded",
        lenient: bool = False,
        strict_objects: bool = False,
        triggers: Triggers | None = None,
        eos_token_id: int | Iterable[int] | None = None,
        inplace: bool = False,
    ) -> None:
        gbnf, self.ignored = json_schema_to_gbnf(
            schema, whitespace=whitespace, lenient=lenient, strict_objects=strict_objects
        )
        super().__init__(gbnf, tokenizer, triggers=triggers, eos_token_id=eos_token_id, inplace=inplace)


class RegexLogitsProcessor(GrammarLogitsProcessor):
    r"""Constrain ``model.generate`` to text that fully matches a regular expression
    (Go RE2 syntax), e.g. ``RegexLogitsProcessor(r"\d{3}-\d{4}", tok)``."""

    def __init__(
        self,
        pattern: str,
        tokenizer: Any,
        *,
        triggers: Triggers | None = None,
        eos_token_id: int | Iterable[int] | None = None,
        inplace: bool = False,
    ) -> None:
        super().__init__(
            regex_to_gbnf(pattern), tokenizer, triggers=triggers, eos_token_id=eos_token_id, inplace=inplace
        )


def allowed_token_ids(mask_words: np.ndarray, vocab_size: int) -> np.ndarray:
    """The ids set in a bitmask of uint32 words (bit i of word i/32 is token i)."""
    bits = np.unpackbits(mask_words.astype("<u4").view(np.uint8), bitorder="little")
    return np.flatnonzero(bits[:vocab_size])
