"""transformers logits processors that constrain generation with tether's Go core.

torch and transformers are imported when this module is (``tether`` itself imports it
only when a processor class is first used), so ``import tether`` works without them.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from . import _cuda
from ._errors import GrammarError, TetherError
from ._native_call import call, native
from .bitmask import _refused
from .grammar import (
    DEFAULT_WHITESPACE,
    Grammar,
    Triggers,
    Vocabulary,
    _id_list,
    _release,
    _vocabulary,
    json_schema_to_gbnf,
    regex_to_gbnf,
)

if TYPE_CHECKING:  # pragma: no cover
    import torch

try:  # transformers is optional: without it the processors still work as callables
    from transformers import LogitsProcessor as _LogitsProcessorBase
    from transformers import LogitsProcessorList as _LogitsProcessorList
except Exception:  # pragma: no cover - ImportError, or transformers without torch
    _LogitsProcessorBase = object  # type: ignore[assignment,misc]
    _LogitsProcessorList = None  # type: ignore[assignment,misc]

# generate calls every processor from LogitsProcessorList.__call__, and makes a new
# LogitsProcessorList for every call: that object names the generate call.
# Scores on a CUDA device get the bitmask in one kernel (tether/_cuda.py) unless
# TETHER_CUDA_KERNEL=0 asks for the torch path (copy, unpack, masked_fill).
_ONE_KERNEL = os.environ.get("TETHER_CUDA_KERNEL", "1") != "0"
_LIST_CALL_CODE = getattr(getattr(_LogitsProcessorList, "__call__", None), "__code__", None)

_MODE_FREE, _MODE_BEGIN, _MODE_STEP = 0, 1, 2
_keys = itertools.count(1)


def _go_dtype(dtype: Any) -> str | None:
    import torch

    return {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}.get(dtype)


def _end_session(handles: int | tuple[int, ...], key: int) -> None:
    """Drop a finished call's Go sessions (from a weakref callback: never raises)."""
    for handle in handles if isinstance(handles, tuple) else (handles,):
        try:
            native.bindings_ProcessorEnd(handle, key)
        except Exception:
            pass


class _Stream:
    """One generate call's (or one thread's direct calls') key and mask buffer, and for
    device scores the event that marks the buffer's last read by the device and the
    one-kernel launch bound to the buffer."""

    __slots__ = ("key", "mask_buf", "copied", "launch", "__weakref__")

    def __init__(self) -> None:
        self.key = next(_keys)
        self.mask_buf: Any = None
        self.copied: Any = None
        self.launch: Any = None  # tether._cuda.Launch bound to mask_buf, False: none can be


def _generation_eos(generation_config: Any) -> list[int]:
    eos = getattr(generation_config, "eos_token_id", None)
    if eos is None:
        raise ValueError(
            "the generation config has no eos_token_id, so generate would never stop on a "
            "token: pass eos_token_id= to the processor (and to generate)"
        )
    return _id_list(eos, "generation_config.eos_token_id")


class GrammarLogitsProcessor(_LogitsProcessorBase):
    """Constrain ``model.generate`` to a GBNF grammar.

    Args:
        grammar: GBNF text (llama.cpp's dialect), or a compiled :class:`tether.Grammar`
            (then ``tokenizer`` may be left out; ``max_stacks`` is set on the Grammar);
            or a list of them, **one per prompt row**: row ``i`` of the prompts follows
            ``grammar[i]``, and the rows ``generate`` makes from it (``num_return_sequences``,
            beams) follow it too. The batch must then be a multiple of the list's length.
        tokenizer: a transformers fast tokenizer, or a :class:`tether.Vocabulary`.
        root: the start rule (default ``"root"``).
        triggers: a :class:`tether.Triggers` makes the grammar lazy: free text until a
            trigger, then the grammar.
        eos_token_id: the end-of-generation token id(s). Replaces the default set.
        model: the model (or ``generation_config``: its GenerationConfig) that will
            generate. End tokens become exactly ``generation_config.eos_token_id``, the ids
            ``generate`` stops on, and the score width must be the model's vocabulary size.
        inplace: write the mask into the scores instead of returning a new tensor.

    **End tokens.** They are allowed exactly when the grammar can end; a finished row is
    offered only end tokens. Which ids: ``eos_token_id`` if given; else the model's
    ``generation_config.eos_token_id`` if ``model`` or ``generation_config`` is given;
    else the tokenizer's EOS plus the end-of-turn tokens tether knows (``<|eot_id|>``,
    ``<|end_of_text|>``, ``<|im_end|>``, ``<end_of_turn>``, ...). Give the model when
    ``generate`` stops on fewer ids than that (Llama-3 stops on ``<|eot_id|>`` only):
    otherwise a finished output may continue with end tokens generate does not know.

    **Calls.** One instance serves any number of ``generate`` calls, one after another
    or at once from several threads, in any mode — batches of different prompts,
    ``num_return_sequences``, greedy, sampling, beam search — because each ``generate``
    call gets its own grammar state and each row's state is found from the tokens it
    holds, not from its position. A new ``generate`` call always starts over, even when
    its prompt extends the last one. Calling the processor directly (outside
    ``generate``) continues the thread's previous call when the input is exactly one
    token longer and extends it, and starts over otherwise; :meth:`reset` forces a start.
    A ``LogitsProcessorList`` that you call yourself counts as one generate call (a new
    prompt in it starts over, but call :meth:`reset` before a prompt that extends the last).

    **Errors.** Bad shapes, dtypes and widths raise ``ValueError``/``TypeError`` before
    anything runs. A state that allows no token at all raises :class:`tether.GrammarError`
    (never a row of all ``-inf``); a grammar too ambiguous to follow within its limits
    raises :class:`tether.GrammarLimitError` (never an inexact mask).

    Like transformers' own processors it returns a new tensor. ``inplace=True`` writes into
    the given scores instead (CPU or GPU), which saves a copy of the row per step; do not combine it
    with ``output_logits=True``, whose raw logits would then show the mask.

    Example (runs with the test tokenizers of a checkout)::

        from transformers import AutoTokenizer, AutoModelForCausalLM
        tok = AutoTokenizer.from_pretrained(model_dir)
        model = AutoModelForCausalLM.from_pretrained(model_dir)
        proc = tether.GrammarLogitsProcessor('root ::= "yes" | "no"', tok, model=model)
        out = model.generate(**tok("Answer:", return_tensors="pt"), logits_processor=[proc])
    """

    def __init__(
        self,
        grammar: str | Grammar | Sequence[str | Grammar],
        tokenizer: Any = None,
        *,
        root: str = "root",
        triggers: Triggers | None = None,
        eos_token_id: int | Iterable[int] | None = None,
        model: Any = None,
        generation_config: Any = None,
        inplace: bool = False,
        dialect: str = "gbnf",
    ) -> None:
        if dialect != "gbnf" and root == "root":
            root = None  # type: ignore[assignment]  # the dialect's own default start rule
        self._dialect = dialect
        if not isinstance(inplace, bool):
            raise TypeError(f"inplace must be a bool, not {type(inplace).__name__}")
        if model is not None and generation_config is not None:
            raise ValueError("give model= or generation_config=, not both")
        self.inplace = inplace
        self._width: int | None = None  # the model's score width, when known
        if model is not None:
            generation_config = getattr(model, "generation_config", None)
            if generation_config is None:
                raise TypeError(f"model= takes a transformers model (with a generation_config), not {type(model).__name__}")
            self._width = _model_width(model)
        eos: list[int] | None = None
        if eos_token_id is not None:
            eos = _id_list(eos_token_id, "eos_token_id")
        elif generation_config is not None:
            eos = _generation_eos(generation_config)
        if isinstance(grammar, (list, tuple)):
            # One grammar per prompt row (see the class docstring).
            if not grammar:
                raise ValueError("grammar is an empty list: give one grammar per prompt row")
            self.grammars: list[Grammar] = [
                self._compile(g, tokenizer, eos, root, triggers) for g in grammar
            ]
            if any(g.vocab is not self.grammars[0].vocab for g in self.grammars):
                raise ValueError("the grammars of one processor must share one tokenizer (one tether.Vocabulary)")
            self.grammar = self.grammars[0]
        else:
            self.grammar = self._compile(grammar, tokenizer, eos, root, triggers)
            self.grammars = [self.grammar]
        self.vocab: Vocabulary = self.grammar.vocab
        if self._width is not None and self._width < self.vocab.size:
            raise ValueError(
                f"the model's vocabulary ({self._width} ids) is smaller than the tokenizer's "
                f"({self.vocab.size}): the tokenizer does not belong to this model"
            )
        self._handles: tuple[int, ...] = tuple(
            call(native.bindings_ProcessorNew, g._handle, error=GrammarError) for g in self.grammars
        )
        self._handle = self._handles[0]
        self._lock = threading.Lock()  # guards _calls (Go has its own locks)
        self._calls: dict[int, tuple[weakref.ref[Any], _Stream]] = {}
        self._local = threading.local()

    def _compile(
        self, grammar: str | Grammar, tokenizer: Any, eos: list[int] | None, root: str, triggers: Triggers | None
    ) -> Grammar:
        """A compiled Grammar from GBNF text or a Grammar, checked against the arguments."""
        if isinstance(grammar, Grammar):
            if tokenizer is not None and _vocabulary(tokenizer, type(self).__name__) is not grammar.vocab:
                raise ValueError("the tokenizer differs from the one the Grammar was compiled for")
            if eos is not None and sorted(set(eos)) != grammar.vocab.eog_token_ids:
                raise ValueError(
                    "end tokens are part of a compiled Grammar's vocabulary: make it with "
                    "tether.Vocabulary.from_hf(tokenizer, eos_token_id=...) instead of passing them here"
                )
            if root not in ("root", None) or triggers is not None:
                raise ValueError("root= and triggers= belong to the Grammar when a Grammar is given")
            return grammar
        else:
            if not isinstance(grammar, str):
                raise TypeError(f"grammar must be GBNF text (str) or a tether.Grammar, not {type(grammar).__name__}")
            if tokenizer is None:
                raise TypeError(f"{type(self).__name__} needs a tokenizer (or a tether.Vocabulary)")
            vocab = _vocabulary(tokenizer, type(self).__name__)
            if eos is not None:
                if vocab is not tokenizer:
                    vocab = Vocabulary.from_hf(tokenizer, eos)
                elif sorted(set(eos)) != vocab.eog_token_ids:
                    raise ValueError("a tether.Vocabulary has its end tokens: give the tokenizer instead to set them")
            return Grammar(grammar, vocab, root, triggers, dialect=self._dialect)

    @property
    def rejected(self) -> int:
        """How many tokens chosen by generate were not allowed by the grammar (another
        processor overrode the mask), over all calls since the processor was made or reset."""
        return sum(call(native.bindings_ProcessorRejected, h, error=TetherError) for h in self._handles)

    def reset(self) -> None:
        """Forget all calls: the next direct call starts a new generation."""
        with self._lock:
            self._calls.clear()
        self._local = threading.local()
        for h in self._handles:
            call(native.bindings_ProcessorReset, h, error=TetherError)

    def _stream(self) -> tuple[_Stream, int]:
        """The stream this call belongs to and the step mode: the generate call found in
        the caller's frames (its LogitsProcessorList), or this thread's direct calls."""
        lst = None
        if _LIST_CALL_CODE is not None:
            try:
                f: Any = sys._getframe(2)
            except ValueError:  # called with no Python caller
                f = None
            for _ in range(3):
                if f is None:
                    break
                if f.f_code is _LIST_CALL_CODE:
                    lst = f.f_locals.get("self")
                    break
                f = f.f_back
        if lst is not None:
            with self._lock:
                entry = self._calls.get(id(lst))
                if entry is not None and entry[0]() is lst:
                    return entry[1], _MODE_STEP
                s = _Stream()
                handle, calls, lid = self._handles, self._calls, id(lst)

                def ended(ref: Any, s: _Stream = s) -> None:
                    e = calls.get(lid)
                    if e is not None and e[0] is ref:
                        del calls[lid]
                    _end_session(handle, s.key)

                self._calls[id(lst)] = (weakref.ref(lst, ended), s)
                return s, _MODE_BEGIN
        s = getattr(self._local, "stream", None)
        if s is None:
            s = _Stream()
            self._local.stream = s
            weakref.finalize(s, _end_session, self._handles, s.key)
        return s, _MODE_FREE

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        r"""Mask the scores of one generation step.

        Args:
            input_ids (`torch.LongTensor` of shape `(batch_size, sequence_length)`):
                The prompt and the tokens generated so far, one row per sequence.
            scores (`torch.FloatTensor` of shape `(batch_size, vocab_size)`):
                The model's next-token scores (logits, or log-probabilities in beam search),
                on any device, in float32/bfloat16/float16 (read and written in place by Go
                on the CPU) or another floating dtype (masked with a bitmask by torch).
                ``vocab_size`` is at least the tokenizer's size, and exactly the model's
                when the processor was given the model.

        Return:
            `torch.FloatTensor` of shape `(batch_size, vocab_size)`: the scores with
            ``-inf`` for every token the grammar does not allow next (the given tensor when
            ``inplace=True``, unless it is a non-contiguous CPU tensor of fp32/bf16/fp16).

        Raises:
            TypeError: input_ids or scores is not a tensor of a supported dtype.
            ValueError: the shapes do not agree, or the width does not fit the tokenizer.
            tether.GrammarError: a row's state allows no token at all.
            tether.GrammarLimitError: the grammar is too ambiguous to follow exactly.
        """
        import torch

        if not isinstance(input_ids, torch.Tensor) or not isinstance(scores, torch.Tensor):
            raise TypeError(
                f"expected torch tensors (input_ids, scores), got {type(input_ids).__name__} and {type(scores).__name__}"
            )
        if input_ids.dtype.is_floating_point or input_ids.dtype.is_complex or input_ids.dtype == torch.bool:
            raise TypeError(f"input_ids must hold integer token ids, not {input_ids.dtype}")
        if not scores.dtype.is_floating_point:
            raise TypeError(f"scores must be a floating-point tensor, not {scores.dtype}")
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be 2-D (batch, sequence), got shape {tuple(input_ids.shape)}")
        if scores.dim() != 2:
            raise ValueError(f"scores must be 2-D (batch, vocabulary), got shape {tuple(scores.shape)}")
        batch, seq_len = input_ids.shape
        if scores.shape[0] != batch:
            raise ValueError(
                f"scores has {scores.shape[0]} rows but input_ids has {batch}: one row of scores per sequence"
            )
        width = scores.shape[1]
        if self._width is not None and width != self._width:
            raise ValueError(
                f"scores has {width} columns but the model's vocabulary has {self._width} ids"
            )
        if width < self.vocab.size:
            raise ValueError(
                f"scores has {width} columns, fewer than the tokenizer's {self.vocab.size} ids: "
                "the tokenizer does not belong to this model"
            )
        if batch == 0:
            return scores
        ids = input_ids
        if ids.device.type != "cpu" or ids.dtype != torch.int64 or not ids.is_contiguous():
            ids = ids.detach().to(device="cpu", dtype=torch.int64).contiguous()
        groups = len(self._handles)
        if batch % groups:
            raise ValueError(
                f"input_ids has {batch} rows, not a multiple of the {groups} grammars (one per "
                "prompt row; num_return_sequences and beams multiply the rows)"
            )
        per = batch // groups  # rows of one prompt: its return sequences or beams
        stream, mode = self._stream()
        dtype = _go_dtype(scores.dtype)
        if scores.device.type == "cpu" and dtype is not None:
            # CPU: one Go call per grammar finds each row's state and copies the row with
            # -inf where masked, in one pass.
            src = scores.contiguous()
            out = src if self.inplace and src is scores else torch.empty_like(src)
            size = src.element_size()
            for g, h in enumerate(self._handles):
                r0 = g * per
                call(
                    native.bindings_ProcessorStepApply, h, stream.key, mode,
                    ids.data_ptr() + r0 * seq_len * 8, per * seq_len, per, seq_len,
                    src.data_ptr() + r0 * width * size, out.data_ptr() + r0 * width * size,
                    per * width, width, dtype,
                    error=TetherError,
                )
            return out
        # GPU (or another dtype): Go fills a CPU bitmask (pinned for CUDA); torch copies
        # it over and applies it, so the scores never leave the device.
        words = (width + 31) // 32
        buf = self._mask_buffer(stream, batch, words, scores.device)
        if stream.copied is not None:
            # The last step's copy out of the pinned buffer runs asynchronously: it must
            # be done before Go writes the buffer again (input_ids already on the CPU
            # would let this step start without any other wait on the device).
            stream.copied.synchronize()
        for g, h in enumerate(self._handles):
            r0 = g * per
            call(
                native.bindings_ProcessorFillMasks, h, stream.key, mode,
                ids.data_ptr() + r0 * seq_len * 8, per * seq_len, per, seq_len,
                buf.data_ptr() + r0 * words * 4, per * words, width,
                error=TetherError,
            )
        if scores.device.type == "cuda" and _ONE_KERNEL:
            # One kernel reads the pinned words through the device mapping and writes
            # -inf in place (tether/_cuda.py), bound to this stream's buffer once; when it
            # cannot run here, torch's path below.
            launch = stream.launch
            if launch is None or (launch and launch.mask is not stream.mask_buf):
                launch = stream.launch = _cuda.bind(stream.mask_buf, scores.device) or False
            if launch:
                out = scores if self.inplace else scores.clone()
                cur = torch.cuda.current_stream(scores.device)
                if launch.run(out, batch, width, cur.cuda_stream):
                    if stream.copied is None:
                        stream.copied = torch.cuda.Event()
                    stream.copied.record(cur)
                    return out
        on_device = buf.to(scores.device, non_blocking=True)
        if scores.device.type == "cuda":
            if stream.copied is None:
                stream.copied = torch.cuda.Event()
            stream.copied.record(torch.cuda.current_stream(scores.device))
        refused = _refused(on_device, width)
        if self.inplace:
            return scores.masked_fill_(refused, float("-inf"))
        return scores.masked_fill(refused, float("-inf"))

    @staticmethod
    def _mask_buffer(stream: _Stream, batch: int, words: int, device: Any) -> Any:
        import torch

        buf = stream.mask_buf
        if buf is None or buf.shape[0] < batch or buf.shape[1] != words:
            pin = device.type == "cuda" and torch.cuda.is_available()
            buf = torch.zeros((batch, words), dtype=torch.int32, pin_memory=pin)
            stream.mask_buf = buf
        return buf[:batch]

    def __del__(self) -> None:
        for h in getattr(self, "_handles", ())[1:]:
            try:
                native.bindings_ProcessorClose(h)
            except Exception:
                pass
        _release(self, native.bindings_ProcessorClose)


def _model_width(model: Any) -> int | None:
    """The number of scores per row the model produces (its output embedding size)."""
    get = getattr(model, "get_output_embeddings", None)
    emb = get() if callable(get) else None
    w = getattr(emb, "out_features", None) or getattr(getattr(emb, "weight", None), "shape", [None])[0]
    if w is None:
        cfg = getattr(model, "config", None)
        w = getattr(cfg, "vocab_size", None) or getattr(getattr(cfg, "text_config", None), "vocab_size", None)
    return int(w) if w else None


class JSONSchemaLogitsProcessor(GrammarLogitsProcessor):
    """Constrain ``model.generate`` to JSON that validates against a JSON Schema.

    ``schema`` is a dict, JSON text, or a pydantic model class; or a list of them, one per
    prompt row (see :class:`GrammarLogitsProcessor`). Options (the same, with the
    same defaults, as :func:`tether.json_schema_to_gbnf` and ``tether gbnf``):

    - ``whitespace``: ``"bounded"`` (default: a space or a newline with limited
      indentation, so a model cannot loop on whitespace), ``"compact"`` (none) or
      ``"flexible"`` (JSON's own unbounded rule).
    - ``strict_objects``: objects allow only the properties they list unless
      ``additionalProperties`` says otherwise (default ``False``: JSON Schema's rule, under
      which unlisted keys are allowed). A pydantic model allows extra keys unless its
      ``model_config`` has ``extra="forbid"``.
    - ``lenient``: ignore keywords tether cannot enforce and list them in ``self.ignored``
      (default ``False``: such a keyword raises :class:`tether.SchemaError`).
    - ``exact_types``, ``draft``, ``resources``: see :func:`tether.json_schema_to_gbnf`.

    The other arguments are :class:`GrammarLogitsProcessor`'s.
    """

    def __init__(
        self,
        schema: Mapping[str, Any] | str | type | Sequence[Mapping[str, Any] | str | type],
        tokenizer: Any,
        *,
        whitespace: str = DEFAULT_WHITESPACE,
        lenient: bool = False,
        strict_objects: bool = False,
        exact_types: bool = False,
        draft: str | None = None,
        resources: Mapping[str, Any] | None = None,
        triggers: Triggers | None = None,
        eos_token_id: int | Iterable[int] | None = None,
        model: Any = None,
        generation_config: Any = None,
        inplace: bool = False,
    ) -> None:
        many = isinstance(schema, (list, tuple))
        converted = [
            json_schema_to_gbnf(
                one, whitespace=whitespace, lenient=lenient, strict_objects=strict_objects,
                exact_types=exact_types, draft=draft, resources=resources,
            )  # fmt: skip
            for one in (schema if many else [schema])
        ]
        if many and not converted:
            raise ValueError("schema is an empty list: give one schema per prompt row")
        #: keywords ignored with ``lenient=True`` (per schema when a list was given)
        self.ignored: Any = [c[1] for c in converted] if many else converted[0][1]
        gbnf: Any = [c[0] for c in converted] if many else converted[0][0]
        super().__init__(
            gbnf, tokenizer, triggers=triggers, eos_token_id=eos_token_id, model=model,
            generation_config=generation_config, inplace=inplace,
        )


class RegexLogitsProcessor(GrammarLogitsProcessor):
    r"""Constrain ``model.generate`` to text that fully matches a regular expression
    (Go RE2 syntax), e.g. ``RegexLogitsProcessor(r"\d{3}-\d{4}", tok)``, or a list of
    patterns, one per prompt row. The other
    arguments are :class:`GrammarLogitsProcessor`'s."""

    def __init__(
        self,
        pattern: str | Sequence[str],
        tokenizer: Any,
        *,
        triggers: Triggers | None = None,
        eos_token_id: int | Iterable[int] | None = None,
        model: Any = None,
        generation_config: Any = None,
        inplace: bool = False,
    ) -> None:
        super().__init__(
            [regex_to_gbnf(p) for p in pattern] if isinstance(pattern, (list, tuple)) else regex_to_gbnf(pattern),
            tokenizer, triggers=triggers, eos_token_id=eos_token_id,
            model=model, generation_config=generation_config, inplace=inplace,
        )


__all__ = [
    "DEFAULT_WHITESPACE",
    "GrammarLogitsProcessor",
    "JSONSchemaLogitsProcessor",
    "RegexLogitsProcessor",
]
