"""Grammars, vocabularies and matchers: tether's core without torch or transformers."""

from __future__ import annotations

import hashlib
import json
import operator
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._errors import GrammarError, SchemaError, TetherError, TokenizerError
from ._native_call import call, fast, native, translate
from .bitmask import _bind

# The per-token calls (accept a token and/or fill a bitmask row), bound once: they go
# through the extension's METH_FASTCALL entry points (bindings/_fastpath), not gopy's.
_accept_fill = fast.accept_fill
_fill_count = fast.fill_count
_accept_fill_array = fast.accept_fill_array
_accept_token = fast.accept_token

#: The default of ``whitespace`` in every entry point (processors,
#: :func:`json_schema_to_gbnf`, ``tether gbnf``): JSON's own whitespace rule is
#: unbounded, and a model that starts emitting spaces or newlines can go on until
#: ``max_new_tokens``; "bounded" allows one space or one newline with limited indentation,
#: which keeps every layout a model normally writes.
DEFAULT_WHITESPACE = "bounded"


def _release(obj: Any, close: Any) -> None:
    """Close obj's native handle once; safe in __del__ (never raises)."""
    h, obj._handle = getattr(obj, "_handle", 0), 0
    if h:
        try:
            close(h)
        except Exception:
            pass


def _str_list(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)):
        raise TypeError(
            f"Triggers({name}=...) takes a list of strings, not a single {type(value).__name__} "
            f"(a string would be split into one-character triggers): write {name}=[{value!r}]"
        )
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"Triggers({name}=...) takes a list of strings, not {type(value).__name__}") from None
    for i, s in enumerate(items):
        if not isinstance(s, str):
            raise TypeError(f"Triggers({name}=...)[{i}] is {type(s).__name__}, not str")
        if not s:
            raise ValueError(f"Triggers({name}=...)[{i}] is empty")
    return items


def _token_id(value: Any, what: str) -> int:
    """value as a token id: an int (numpy and torch integers included), not a bool or
    a float, not negative."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an int token id, not bool")
    try:
        i = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int token id, not {type(value).__name__} ({value!r})") from None
    if i < 0:
        raise ValueError(f"{what} must be a token id >= 0, not {i}")
    return i


def _id_list(value: Any, what: str) -> list[int]:
    """An int or an iterable of ints, as a list of token ids."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{what} takes token ids (an int or a list of ints), not {type(value).__name__}")
    try:
        items = list(value)
    except TypeError:
        return [_token_id(value, what)]
    return [_token_id(v, f"{what}[{i}]") for i, v in enumerate(items)]


@dataclass(frozen=True)
class Triggers:
    r"""When a lazy grammar wakes up. Until then the processor masks nothing.

    Words, tokens and patterns match the **generated** text only, as in llama.cpp: a
    trigger that is already in the prompt does not fire. ``after`` also looks at the end
    of the prompt (see below).

    - ``words``: substrings of the generated text; the grammar then describes the output
      from the start of the word on (the word is part of the constrained text).
    - ``tokens``: token ids, with the same meaning.
    - ``patterns``: regular expressions (Go RE2 syntax) searched in the generated text;
      the first capture group, if any, marks where constrained text begins.
    - ``patterns_at_start``: the older name of ``patterns_full`` (below).
    - ``patterns_full``: llama.cpp's PATTERN_FULL: each must match the *whole* output so
      far; the constrained text starts at its first capture group that matched a
      non-empty string (e.g. ``r"[\s\S]*?(<tool_call>)[\s\S]*"``).
    - ``preserved_tokens``: special tokens (as written in the tokenizer, e.g.
      ``"<|python_tag|>"``) that count as their text for the grammar, like llama.cpp's
      ``preserved_tokens``; other special tokens match only where the grammar names them
      (``<|name|>``).
    - ``after``: a marker such as ``"</think>"``; the grammar applies to the text after it.
      When the prompt already contains the marker and its last occurrence is not followed
      by a new opening (``"<think>"`` for ``"</think>"``), the grammar applies from the
      first generated token: Qwen3's chat template with ``enable_thinking=False`` ends
      the prompt with ``<think>\n\n</think>\n\n``.

    Words, patterns and patterns_full see special tokens' text, and when one fires the
    buffered tokens are replayed into the grammar, as in llama.cpp: words and
    ``patterns`` are searched anywhere and the constrained text starts where the match
    starts.

    To constrain from the first generated token whatever the prompt says, use a grammar
    without triggers; to keep a trigger word in the output, write it in the grammar and
    end the prompt just before it.

    >>> Triggers(words=["<tool_call>"]).words
    ('<tool_call>',)
    >>> Triggers(words=["<tool_call>"], patterns_full=[r"[\s\S]*?(\[TOOL_CALLS\])[\s\S]*"]).to_json()[:24]
    '{"words": ["<tool_call>"'
    >>> Triggers(words="<tool_call>")
    Traceback (most recent call last):
    ...
    TypeError: Triggers(words=...) takes a list of strings, not a single str (a string would be split into one-character triggers): write words=['<tool_call>']
    """

    words: Sequence[str] = field(default_factory=tuple)
    tokens: Sequence[int] = field(default_factory=tuple)
    patterns: Sequence[str] = field(default_factory=tuple)
    patterns_at_start: Sequence[str] = field(default_factory=tuple)
    after: str | None = None
    patterns_full: Sequence[str] = field(default_factory=tuple)
    preserved_tokens: Sequence[str] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        for name in ("words", "patterns", "patterns_at_start", "patterns_full", "preserved_tokens"):
            object.__setattr__(self, name, _str_list(name, getattr(self, name)))
        if isinstance(self.tokens, (str, bytes)):
            raise TypeError("Triggers(tokens=...) takes a list of token ids, not a string")
        object.__setattr__(self, "tokens", tuple(_id_list(self.tokens, "Triggers(tokens=...)")))
        if self.after is not None and not isinstance(self.after, str):
            raise TypeError(f"Triggers(after=...) takes a str, not {type(self.after).__name__}")
        if self.after == "":
            raise ValueError("Triggers(after=...) is empty: give a marker such as '</think>', or None")
        if not (self.words or self.tokens or self.patterns or self.patterns_at_start or self.patterns_full or self.after):
            raise ValueError("Triggers() with nothing to wait for: give words, tokens, patterns, patterns_full or after")

    def to_json(self) -> str:
        return json.dumps(
            {
                "words": list(self.words),
                "tokens": list(self.tokens),
                "patterns": list(self.patterns),
                "patterns_at_start": list(self.patterns_at_start),
                "after": self.after or "",
                "patterns_full": list(self.patterns_full),
                "preserved_tokens": list(self.preserved_tokens),
            }
        )


class Vocabulary:
    """A tokenizer's vocabulary as the Go core sees it: exact bytes per token, special
    tokens, end-of-generation tokens. Built once per tokenizer and end-token set, and shared.

    ``eog_token_ids`` are the tokens that end generation: they are allowed exactly when
    the grammar can end, and a row that takes one is finished.
    """

    _cache: dict[str, Vocabulary] = {}
    # Per tokenizer object, so a processor made per request does not serialize and hash
    # the tokenizer.json again; keyed by length too, as add_tokens changes a tokenizer.
    _by_object: weakref.WeakKeyDictionary[Any, dict[tuple[int, str], Vocabulary]] = weakref.WeakKeyDictionary()
    _lock = threading.Lock()

    def __init__(self, handle: int, eog: list[int], size: int) -> None:
        self._handle = handle
        self.eog_token_ids: list[int] = eog
        self._eog_set = frozenset(eog)
        self.size: int = size  # token ids the tokenizer defines

    def __len__(self) -> int:
        return self.size

    def __del__(self) -> None:
        # the Go vocabulary lives on while grammars made from it do
        _release(self, native.bindings_VocabClose)

    @classmethod
    def from_hf(
        cls, tokenizer: Any, eos_token_id: int | Iterable[int] | None = None, *, shared: bool = True
    ) -> Vocabulary:
        """The vocabulary of a transformers fast tokenizer (its tokenizer.json goes to Go).

        End-of-generation tokens: exactly ``eos_token_id`` (an id or a list of ids, e.g.
        ``model.generation_config.eos_token_id``) when given; otherwise the tokenizer's EOS
        and the end-of-turn tokens tether knows (``<|eot_id|>``, ``<|im_end|>``,
        ``<end_of_turn>``, ...).

        By default one vocabulary serves every caller with the same tokenizer and end
        tokens: its token trie and the token sets it caches across grammars are shared.
        ``shared=False`` builds one of its own, whose caches start cold and stay its own
        (isolation; benchmarks of first visits).

        >>> import os, pathlib
        >>> from transformers import PreTrainedTokenizerFast
        >>> path = pathlib.Path(os.environ.get("TETHER_TOKENIZERS", "build/tokenizers")) / "llama3/tokenizer.json"
        >>> tok = PreTrainedTokenizerFast(tokenizer_file=str(path))
        >>> Vocabulary.from_hf(tok) is Vocabulary.from_hf(tok)
        True
        >>> Vocabulary.from_hf(tok, shared=False) is Vocabulary.from_hf(tok)
        False
        """
        if not isinstance(shared, bool):
            raise TypeError(f"shared must be a bool, not {type(shared).__name__}")
        if isinstance(tokenizer, Vocabulary):
            raise TypeError("Vocabulary.from_hf takes a transformers tokenizer, and got a Vocabulary already")
        exact: list[int] | None = None
        if eos_token_id is not None:
            exact = sorted(set(_id_list(eos_token_id, "eos_token_id")))
            if not exact:
                raise ValueError("eos_token_id is an empty list: generation could never end")
        obj_key = (len(tokenizer) if hasattr(tokenizer, "__len__") else -1, json.dumps(exact))
        try:
            hit = cls._by_object.get(tokenizer, {}).get(obj_key) if shared else None
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
        if not shared:
            return cls._load(tok_json, config, exact, native.bindings_VocabFromJSONUnshared)
        key = hashlib.sha256(
            tok_json.encode("utf-8", "surrogatepass") + json.dumps([config, exact]).encode()
        ).hexdigest()
        with cls._lock:
            v = cls._cache.get(key)
            if v is None:
                v = cls._load(tok_json, config, exact, native.bindings_VocabFromJSON)
                cls._cache[key] = v
            try:
                cls._by_object.setdefault(tokenizer, {})[obj_key] = v
            except TypeError:
                pass
            return v

    @classmethod
    def _load(cls, tok_json: str, config: dict[str, Any], exact: list[int] | None, fn: Any) -> Vocabulary:
        """A Vocabulary loaded by the Go core's fn (VocabFromJSON or VocabFromJSONUnshared)."""
        h = call(fn, tok_json, json.dumps(config), "" if exact is None else json.dumps(exact), error=TokenizerError)
        eog = json.loads(call(native.bindings_VocabEOG, h, error=TokenizerError))
        size = call(native.bindings_VocabSize, h, error=TokenizerError)
        return cls(h, eog, size)


def _max_stacks(max_stacks: int | None) -> int:
    """The max_stacks argument for the Go core: 0 for the default, else a count >= 1."""
    if max_stacks is None:
        return 0
    stacks = _token_id(max_stacks, "max_stacks")
    if stacks == 0:
        raise ValueError("max_stacks must be at least 1")
    return stacks


def _vocabulary(tokenizer: Any, what: str) -> Vocabulary:
    """A Vocabulary from a Vocabulary or a transformers fast tokenizer."""
    if isinstance(tokenizer, Vocabulary):
        return tokenizer
    if isinstance(tokenizer, (str, bytes)) or not hasattr(tokenizer, "backend_tokenizer"):
        raise TypeError(
            f"{what} takes a transformers fast tokenizer (e.g. AutoTokenizer.from_pretrained(...)) "
            f"or a tether.Vocabulary, not {type(tokenizer).__name__}"
        )
    return Vocabulary.from_hf(tokenizer)


class Grammar:
    """A compiled GBNF grammar over a vocabulary; immutable and shared by matchers.

    ``tokenizer`` is a transformers fast tokenizer or a :class:`Vocabulary`. ``root``
    names the start rule, ``triggers`` makes the grammar lazy, ``max_stacks`` caps the
    parse stacks one state may hold (default 16384; stacks with the same top are merged,
    so that is at most one per grammar position live at once; a state that needs more
    raises :class:`tether.GrammarLimitError` instead of giving an inexact mask).

    >>> import os, pathlib
    >>> from transformers import PreTrainedTokenizerFast
    >>> path = pathlib.Path(os.environ.get("TETHER_TOKENIZERS", "build/tokenizers")) / "llama3/tokenizer.json"
    >>> tok = PreTrainedTokenizerFast(tokenizer_file=str(path))
    >>> g = Grammar('root ::= "yes" | "no"', tok)
    >>> g.matcher().accepts("yes"), g.matcher().accepts("maybe")
    (True, False)
    """

    def __init__(
        self,
        grammar: str,
        tokenizer: Any,
        root: str | None = None,
        triggers: Triggers | None = None,
        *,
        max_stacks: int | None = None,
        dialect: str = "gbnf",
    ) -> None:
        if not isinstance(grammar, str) and isinstance(tokenizer, str):
            grammar, tokenizer = tokenizer, grammar  # the old order: Grammar(vocab, gbnf)
        if not isinstance(grammar, str):
            raise TypeError(f"Grammar takes grammar text (str) first, not {type(grammar).__name__}")
        if dialect not in ("gbnf", "bnf"):
            raise GrammarError(f'unknown grammar dialect {dialect!r}: expected "gbnf" or "bnf"')
        if root is None:
            root = "root" if dialect == "gbnf" else ""
        if not isinstance(root, str) or (not root and dialect == "gbnf"):
            raise TypeError(f"root must be a rule name (non-empty str), not {root!r}")
        if triggers is not None and not isinstance(triggers, Triggers):
            raise TypeError(f"triggers must be a tether.Triggers, not {type(triggers).__name__}")
        stacks = _max_stacks(max_stacks)
        self.vocab = _vocabulary(tokenizer, "Grammar")
        self._gbnf: str | None = grammar
        self.dialect = dialect
        self.triggers = triggers
        #: keywords a schema's conversion ignored (:meth:`from_json_schema` with
        #: ``lenient=True``); empty for grammars given as text
        self.ignored: list[str] = []
        self._handle = call(
            native.bindings_GrammarCompileDialect, self.vocab._handle, grammar, root,
            triggers.to_json() if triggers else "", dialect, stacks,
            error=GrammarError,
        )

    @property
    def gbnf(self) -> str:
        """The grammar's text (for :meth:`from_json_schema`, the GBNF the schema became)."""
        if self._gbnf is None:
            self._gbnf = call(native.bindings_GrammarSource, self._handle, error=TetherError)
        return self._gbnf

    @classmethod
    def from_json_schema(
        cls,
        schema: Mapping[str, Any] | str | type,
        tokenizer: Any,
        *,
        whitespace: str = DEFAULT_WHITESPACE,
        lenient: bool = False,
        strict_objects: bool = False,
        max_stacks: int | None = None,
        exact_types: bool = False,
        draft: str | None = None,
        resources: Mapping[str, Any] | None = None,
    ) -> Grammar:
        """Compile a JSON Schema (a dict, JSON text, or a pydantic model class) in one call
        into the Go core: the same grammar as ``Grammar(json_schema_to_gbnf(schema)[0],
        tokenizer)``, without the grammar text crossing to Python and back or being parsed
        twice (on the MaskBench dev split, 4% less compile time at p50 and 10% at p99).
        The options are :func:`json_schema_to_gbnf`'s; ``self.ignored`` lists the keywords
        ignored with ``lenient=True``.

        >>> import os, pathlib
        >>> from transformers import PreTrainedTokenizerFast
        >>> path = pathlib.Path(os.environ.get("TETHER_TOKENIZERS", "build/tokenizers")) / "llama3/tokenizer.json"
        >>> tok = PreTrainedTokenizerFast(tokenizer_file=str(path))
        >>> g = Grammar.from_json_schema({"type": "array", "items": {"type": "integer"}}, tok)
        >>> g.matcher().accepts("[1, 2]"), g.matcher().accepts('["a"]')
        (True, False)
        """
        text, opts = _schema_args(schema, whitespace, lenient, strict_objects, exact_types, draft, resources)
        stacks = _max_stacks(max_stacks)
        self = cls.__new__(cls)
        self.vocab = _vocabulary(tokenizer, "Grammar.from_json_schema")
        self._gbnf, self.dialect, self.triggers = None, "gbnf", None
        out = json.loads(call(
            native.bindings_GrammarFromSchema, self.vocab._handle, text, opts, stacks, error=SchemaError,
        ))
        self._handle = out["handle"]
        self.ignored = _ignored_list(out)
        return self

    @classmethod
    def from_bnf(
        cls, bnf: str, tokenizer: Any, root: str | None = None, triggers: Triggers | None = None,
        *, max_stacks: int | None = None,
    ) -> Grammar:
        """Compile a grammar written in bnf_sampler's BNF dialect.

        ``<name> ::= 'x' | "y" | <other>``; consecutive terminals merge; ``<any!>`` is any
        one token; ``<except!('lit')>`` / ``<except!([rule])>`` is one token without the
        excepted literals (or its part before the first). ``\\xHH`` bytes that form UTF-8
        characters are characters; any other byte is a raw byte, matched as one byte
        (bnf_sampler's ``<byte> ::= '\\xf0'|'\\xa0'|'\\xb0'`` allows exactly the tokens
        made of those bytes), so the output holds bytes that are not UTF-8 only where the
        grammar puts raw bytes. The start rule is ``root``, else ``<start>``, else the
        first production. Left recursion is rewritten automatically.

        >>> import os, pathlib
        >>> from transformers import PreTrainedTokenizerFast
        >>> path = pathlib.Path(os.environ.get("TETHER_TOKENIZERS", "build/tokenizers")) / "llama3/tokenizer.json"
        >>> tok = PreTrainedTokenizerFast(tokenizer_file=str(path))
        >>> m = Grammar.from_bnf("<start> ::= 'cryscan' <any!>", tok).matcher()
        >>> [tok.decode([t]) for t in m.possible_tokens()]
        ['cry']
        >>> m = Grammar.from_bnf(r"<start> ::= '\\xf0' <start> | '\\xa0'", tok).matcher()
        >>> [tok.convert_ids_to_tokens(t) for t in m.possible_tokens()]  # the bytes F0 and A0
        ['ð', 'ł']
        """
        return cls(bnf, tokenizer, root, triggers, max_stacks=max_stacks, dialect="bnf")

    def matcher(self) -> Matcher:
        """A new matcher at the start of this grammar."""
        return Matcher(self)

    def __del__(self) -> None:
        _release(self, native.bindings_GrammarClose)


def _utf8_prefix(data: bytes) -> str:
    """The longest prefix of data that is whole UTF-8 characters, decoded."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        return data[: e.start].decode("utf-8")


class Matcher:
    """One sequence's position in a grammar: feed it tokens or text, ask what may follow.

    >>> import os, pathlib
    >>> from transformers import PreTrainedTokenizerFast
    >>> path = pathlib.Path(os.environ.get("TETHER_TOKENIZERS", "build/tokenizers")) / "llama3/tokenizer.json"
    >>> m = Grammar('root ::= "{" [a-z]+ "}"', PreTrainedTokenizerFast(tokenizer_file=str(path))).matcher()
    >>> m.accept_text("{ab"); m.can_end
    False
    >>> m.accept_text("}"); m.can_end
    True
    """

    def __init__(self, grammar: Grammar, _handle: int = 0) -> None:
        if not isinstance(grammar, Grammar):
            raise TypeError(f"Matcher takes a tether.Grammar, not {type(grammar).__name__}")
        self.grammar = grammar
        # One entry per accepted step (accept_token / accept_text), True where the step
        # was an end-of-generation token: is_terminated() and rollback() read it.
        self._steps: list[bool] = []
        self._bound: Any = None  # the last bitmask filled, checked (bitmask._bind)
        self._handle = _handle or call(native.bindings_MatcherNew, grammar._handle, error=GrammarError)

    def accept_token(self, token_id: int) -> None:
        """Advance by one token; GrammarError says why it is not allowed (state unchanged).
        A token id must be an int (TypeError otherwise). After an end-of-generation token
        the matcher is terminated (:meth:`is_terminated`) and accepts nothing more."""
        tid = _token_id(token_id, "token_id")
        if self._steps and self._steps[-1]:
            raise GrammarError(f"token {tid} after the end-of-generation token that terminated the matcher")
        call(_accept_token, self._handle, tid, error=GrammarError)
        self._steps.append(tid in self.grammar.vocab._eog_set)

    def accept_text(self, text: str) -> None:
        """Advance by the UTF-8 bytes of text; GrammarError says where it was rejected."""
        if not isinstance(text, str):
            raise TypeError(f"accept_text takes a str, not {type(text).__name__}")
        if self._steps and self._steps[-1]:
            raise GrammarError("text after the end-of-generation token that terminated the matcher")
        call(native.bindings_MatcherAcceptText, self._handle, text, error=GrammarError)
        self._steps.append(False)

    def accepts(self, text: str) -> bool:
        """Whether text, read from the current state, completes a match: every byte is
        accepted and the grammar can end right after it. The matcher is left unchanged.
        A text that is only the start of a match is not accepted (see :meth:`accepts_prefix`).

        >>> import os, pathlib
        >>> from transformers import PreTrainedTokenizerFast
        >>> path = pathlib.Path(os.environ.get("TETHER_TOKENIZERS", "build/tokenizers")) / "llama3/tokenizer.json"
        >>> g = Grammar.from_json_schema({"type": "integer", "minimum": 10}, PreTrainedTokenizerFast(tokenizer_file=str(path)))
        >>> g.matcher().accepts("12"), g.matcher().accepts("1"), g.matcher().accepts_prefix("1")
        (True, False, True)
        """
        m = self._after(text)
        return m is not None and m.can_end

    def accepts_prefix(self, text: str) -> bool:
        """Whether every byte of text, read from the current state, is accepted: text is a
        match or the start of one (the grammar need not be able to end after it). The
        matcher is left unchanged."""
        return self._after(text) is not None

    def _after(self, text: str) -> Matcher | None:
        """A clone that has accepted text, or None where text is rejected."""
        m = self.clone()
        try:
            m.accept_text(text)
        except GrammarError:
            return None
        return m

    def allowed_token_ids(self, vocab_size: int | None = None) -> np.ndarray:
        """The token ids allowed next (vocab_size defaults to the tokenizer's).
        :class:`tether.GrammarLimitError` when a limit prevents an exact answer."""
        n = self.grammar.vocab.size if vocab_size is None else _token_id(vocab_size, "vocab_size")
        if n == 0:
            raise ValueError("vocab_size must be at least 1")
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
        :class:`tether.GrammarLimitError` when a limit prevents an exact answer."""
        out = call(native.bindings_MatcherPossibleTokens, self._handle, bool(longest_only), error=GrammarError)
        return json.loads(out)
    def accept_tokens(self, token_ids: Iterable[int]) -> None:
        """Advance by several tokens; all or nothing: when one is refused, the tokens this
        call accepted are rolled back and :class:`tether.GrammarError` names the refused one."""
        ids = _id_list(token_ids, "token_ids")
        done = 0
        try:
            for t in ids:
                self.accept_token(t)
                done += 1
        except TetherError:
            if done:
                self.rollback(done)
            raise

    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0, *, count: bool = False) -> int | None:
        """Write the tokens allowed next into row ``index`` of ``bitmask``, an int32 torch
        tensor or numpy array ``[batch, ceil(vocab_size/32)]`` on the CPU (xgrammar's
        layout: bit ``i % 32`` of word ``i // 32`` is token ``i``, least significant bit
        first). End-of-generation tokens are allowed exactly when the grammar can end;
        columns past the tokenizer (a model's padding ids) are cleared.
        :class:`tether.GrammarLimitError` (and a cleared row) when a limit prevents an
        exact mask.

        Returns None, or with ``count=True`` the number of allowed tokens (counting a
        Llama-3 row costs about 2 µs, as much as a typical mask, so it is not the
        default).

        A numpy array is checked inside the one native call (shape, dtype, layout,
        address, every call); a torch tensor is checked on the first call and later calls
        with the same tensor (same shape and address) go straight to the Go core, so a
        decoding loop pays about one native call per mask either way. See :meth:`accept_and_fill` for a
        whole step (accept the sampled token, fill the next row) in one call.

        >>> mask = tether.allocate_token_bitmask(1, len(tok))         # doctest: +SKIP
        >>> m.fill_next_token_bitmask(mask)                           # doctest: +SKIP
        >>> m.fill_next_token_bitmask(mask, count=True)               # doctest: +SKIP
        10
        """
        if type(bitmask) is np.ndarray and type(index) is int and not count:
            # numpy: checked in C on every call, one call into the extension
            try:
                if _accept_fill_array(self._handle, -1, bitmask, index) is None:
                    return None
            except (RuntimeError, ValueError, OverflowError) as exc:
                raise translate(exc, _accept_fill_array, TetherError) from None
            # NotImplemented: an array the fast path does not take; the checks below say why
        b = self._bound  # _still_bound, inlined: this is the per-token path
        if b is None or b[0] is not bitmask or bitmask.shape != b[4] or (b[5] and bitmask.data_ptr() != b[1]):
            b = self._bound = _bind(bitmask)
        if type(index) is not int or not 0 <= index < b[2]:
            index = self._row_index(index, b[2])
        if not count:
            try:
                _accept_fill(self._handle, -1, b[1], b[2], b[3], index)
            except (RuntimeError, ValueError, OverflowError) as exc:
                raise translate(exc, _accept_fill, TetherError) from None
            return None
        try:
            return _fill_count(self._handle, b[1], b[2], b[3], index)
        except (RuntimeError, ValueError, OverflowError) as exc:
            raise translate(exc, _fill_count, TetherError) from None

    def accept_and_fill(self, token_id: int, bitmask: Any, index: int = 0) -> None:
        """One decoding step in one call into the Go core: accept ``token_id`` (the token
        just sampled), then write the tokens allowed after it into row ``index`` of
        ``bitmask``, as :meth:`fill_next_token_bitmask` does.

        A refused token raises :class:`tether.GrammarError` with the matcher unchanged
        and the row cleared; after an end-of-generation token the matcher is terminated
        (:meth:`is_terminated`) and the row holds what the grammar allows after it
        (nothing, for a grammar that ended).

        >>> import os, pathlib, numpy as np
        >>> from transformers import PreTrainedTokenizerFast
        >>> path = pathlib.Path(os.environ.get("TETHER_TOKENIZERS", "build/tokenizers")) / "llama3/tokenizer.json"
        >>> tok = PreTrainedTokenizerFast(tokenizer_file=str(path))
        >>> m = Grammar('root ::= "ab" [0-9]', tok).matcher()
        >>> mask = np.zeros((1, (len(tok) + 31) // 32), dtype=np.int32)
        >>> m.fill_next_token_bitmask(mask, count=True) > 0
        True
        >>> m.accept_and_fill(tok.convert_tokens_to_ids("ab"), mask)
        >>> [tok.decode([int(t)]) for t in allowed_token_ids(mask[0].view(np.uint32), len(tok))][:3]
        ['0', '1', '2']
        """
        tid = token_id if type(token_id) is int and token_id >= 0 else _token_id(token_id, "token_id")
        if self._steps and self._steps[-1]:
            raise GrammarError(f"token {tid} after the end-of-generation token that terminated the matcher")
        if type(bitmask) is np.ndarray and type(index) is int:
            try:
                done = _accept_fill_array(self._handle, tid, bitmask, index) is None
            except (RuntimeError, ValueError, OverflowError) as exc:
                raise translate(exc, _accept_fill_array, GrammarError) from None
            if done:
                self._steps.append(tid in self.grammar.vocab._eog_set)
                return
        b = self._bound
        if b is None or b[0] is not bitmask or bitmask.shape != b[4] or (b[5] and bitmask.data_ptr() != b[1]):
            b = self._bound = _bind(bitmask)
        if type(index) is not int or not 0 <= index < b[2]:
            index = self._row_index(index, b[2])
        try:
            _accept_fill(self._handle, tid, b[1], b[2], b[3], index)
        except (RuntimeError, ValueError, OverflowError) as exc:
            raise translate(exc, _accept_fill, GrammarError) from None
        self._steps.append(tid in self.grammar.vocab._eog_set)

    @staticmethod
    def _row_index(index: Any, rows: int) -> int:
        i = _token_id(index, "index")
        if i >= rows:
            raise IndexError(f"index {i} outside a bitmask of {rows} rows")
        return i

    def is_terminated(self) -> bool:
        """Whether the last accepted token ended generation (an end-of-generation token
        the grammar allowed). A terminated matcher accepts nothing until rolled back or
        reset."""
        return bool(self._steps) and self._steps[-1]

    def forced_text(self, max_bytes: int = 256) -> str:
        """The text the grammar forces next (jump-forward decoding): the longest string every
        continuation begins with, at most ``max_bytes`` bytes. Empty where the grammar could
        end or go more than one way, and for a lazy grammar awaiting its trigger. It stops
        before the first byte that is not part of a whole UTF-8 character: a character only
        partly forced, or a raw byte of a bnf grammar (so the text can be fed back with
        :meth:`accept_text`). The matcher is not changed.

        >>> g = Grammar('root ::= "{\\"name\\": " [a-z]+ "}"', tok)   # doctest: +SKIP
        >>> g.matcher().forced_text()                                 # doctest: +SKIP
        '{"name": '
        """
        n = _token_id(max_bytes, "max_bytes")
        if n == 0 or self.is_terminated():
            return ""
        buf = np.zeros(n, dtype=np.uint8)
        k = call(native.bindings_MatcherForcedBytes, self._handle, buf.ctypes.data, n, error=TetherError)
        return _utf8_prefix(bytes(buf[:k]))

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
        m = Matcher(self.grammar, call(native.bindings_MatcherClone, self._handle, error=TetherError))
        m._steps = list(self._steps)
        return m

    def reset(self) -> None:
        """Back to the start of the grammar."""
        call(native.bindings_MatcherReset, self._handle, error=TetherError)
        self._steps.clear()

    def rollback(self, n: int = 1) -> None:
        """Undo the last n accepted steps (tokens, or :meth:`accept_text` calls)."""
        k = _token_id(n, "n")
        call(native.bindings_MatcherRollback, self._handle, k, error=GrammarError)
        if k:
            del self._steps[-k:]

    def __del__(self) -> None:
        _release(self, native.bindings_MatcherClose)


def json_schema_to_gbnf(
    schema: Mapping[str, Any] | str | type,
    *,
    whitespace: str = DEFAULT_WHITESPACE,
    lenient: bool = False,
    strict_objects: bool = False,
    exact_types: bool = False,
    draft: str | None = None,
    resources: Mapping[str, Any] | None = None,
) -> tuple[str, list[str]]:
    """Translate a JSON Schema (a dict, JSON text, or a pydantic model class) to GBNF.

    Returns the grammar and the list of keywords ignored (only with ``lenient=True``;
    otherwise a keyword tether cannot enforce raises :class:`tether.SchemaError`).
    The options and their defaults are the processors' (and ``tether gbnf``'s), so this
    prints the grammar a :class:`JSONSchemaLogitsProcessor` uses:

    - ``exact_types``: a schema without ``"type"`` accepts every type whose keywords it
      satisfies, as JSON Schema reads it (``{"required": ["a"]}`` accepts ``12``), and
      numeric enum/const values with trailing zeros (``1.0`` for ``1``). The default
      narrows such a schema to the types its keywords are about, since a schema written
      for a model's output almost always means that type.
    - ``draft``: the dialect of a schema whose ``$schema`` names none (``"2020-12"``,
      the default, ``"2019-09"``, ``"draft-07"``, ``"draft-06"``, ``"draft-04"``); it
      decides how ``$id`` beside ``$ref`` resolves.
    - ``resources``: ``{uri: schema}``, the documents ``$ref`` may name besides this one
      (nothing is fetched; a reference to another document raises SchemaError).

    >>> gbnf, ignored = json_schema_to_gbnf({"type": "integer", "minimum": 0, "maximum": 99})
    >>> "root" in gbnf, ignored
    (True, [])
    """
    text, opts = _schema_args(schema, whitespace, lenient, strict_objects, exact_types, draft, resources)
    out = json.loads(call(native.bindings_SchemaToGBNF, text, opts, error=SchemaError))
    return out["grammar"], _ignored_list(out)


def _ignored_list(out: Mapping[str, Any]) -> list[str]:
    return [f"{i['keyword']} at {i['pointer'] or '/'}" for i in out.get("ignored") or []]


DRAFTS = ("2020-12", "2019-09", "draft-07", "draft-06", "draft-04")


def _schema_text(schema: Any, what: str = "schema") -> str:
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        schema = schema.model_json_schema()  # pydantic v2 model class
    if isinstance(schema, str):
        return schema
    if isinstance(schema, (Mapping, bool)):
        return json.dumps(schema)
    raise TypeError(f"{what} must be a dict, JSON text or a pydantic model class, not {type(schema).__name__}")


def _schema_args(
    schema: Any,
    whitespace: str,
    lenient: bool,
    strict_objects: bool,
    exact_types: bool = False,
    draft: str | None = None,
    resources: Mapping[str, Any] | None = None,
) -> tuple[str, str]:
    """The schema's JSON text and the converter's options as JSON, checked."""
    if whitespace not in ("bounded", "compact", "flexible"):
        raise ValueError(f"whitespace must be 'bounded', 'compact' or 'flexible', not {whitespace!r}")
    for name, flag in (("lenient", lenient), ("strict_objects", strict_objects), ("exact_types", exact_types)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, not {type(flag).__name__}")
    if draft is not None and draft not in DRAFTS:
        raise ValueError(f"draft must be one of {', '.join(DRAFTS)}, not {draft!r}")
    opts: dict[str, Any] = {"whitespace": whitespace, "lenient": lenient, "strict_objects": strict_objects}
    if exact_types:
        opts["exact_types"] = True
    if draft is not None:
        opts["draft"] = draft
    if resources is not None:
        if not isinstance(resources, Mapping):
            raise TypeError(f"resources must map URIs to schemas, not {type(resources).__name__}")
        opts["resources"] = {}
        for uri, doc in resources.items():
            if not isinstance(uri, str):
                raise TypeError(f"resources: a URI must be a str, not {type(uri).__name__}")
            opts["resources"][uri] = json.loads(_schema_text(doc, f"resources[{uri!r}]"))
    return _schema_text(schema), json.dumps(opts)


def regex_to_gbnf(pattern: str) -> str:
    r"""Translate a regular expression (Go RE2 syntax, matched in full) to GBNF.

    >>> "root" in regex_to_gbnf(r"\d{3}-\d{4}")
    True
    """
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, not {type(pattern).__name__}")
    return call(native.bindings_RegexToGBNF, pattern, error=GrammarError)


def allowed_token_ids(mask_words: np.ndarray, vocab_size: int) -> np.ndarray:
    """The ids set in a bitmask of uint32 words (bit i of word i/32 is token i)."""
    bits = np.unpackbits(mask_words.astype("<u4").view(np.uint8), bitorder="little")
    return np.flatnonzero(bits[:vocab_size])
