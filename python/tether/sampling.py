"""llama.cpp's sampler chain (gocore/sampling) for Python and 🤗 transformers.

``SamplerChain`` samples one sequence step by step from logits you hold;
``SamplingLogitsProcessor`` runs the same chain inside ``model.generate`` as the last
logits processor: it picks the token llama.cpp's chain would pick and leaves only that
token's score finite, so greedy search and sampling in ``generate`` both take it.

Parameter names, defaults and the sampler order are llama.cpp's
(``common_params_sampling``): ``temp``, ``top_k``, ``top_p``, ``min_p``, ``typ_p``,
``top_n_sigma``, ``xtc_probability``, ``xtc_threshold``, ``penalty_last_n``,
``penalty_repeat``, ``penalty_freq``, ``penalty_present``, ``dry_multiplier``,
``dry_base``, ``dry_allowed_length``, ``dry_penalty_last_n``, ``dry_sequence_breakers``,
``dynatemp_range``, ``dynatemp_exponent``, ``mirostat``, ``mirostat_tau``,
``mirostat_eta``, ``min_keep``, ``logit_bias``, ``n_ctx``, ``n_vocab``; the llama.cpp
server's spellings (``temperature``, ``repeat_penalty``, ``frequency_penalty``,
``presence_penalty``, ``repeat_last_n``, ``typical_p``) are accepted too. A bad value
raises :class:`ParamError` naming the parameter.

>>> import numpy as np
>>> chain = SamplerChain("top_k;temperature", seed=42, top_k=1)
>>> chain.sample(np.array([0.1, 2.0, 0.5], dtype=np.float32))
1
>>> SamplerChain(top_p=1.5)
Traceback (most recent call last):
    ...
tether.sampling.ParamError: sampling: top_p = 1.5: must be in [0, 1]
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ._errors import GrammarError, TetherError
from ._native_call import call, native
from .grammar import Grammar, Vocabulary, _release

if TYPE_CHECKING:  # pragma: no cover
    from .processors import GrammarLogitsProcessor

T = TypeVar("T")

#: llama.cpp's default order of the configurable samplers.
DEFAULT_SAMPLERS = "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature"
#: llama.cpp's LLAMA_DEFAULT_SEED: draw a random seed.
DEFAULT_SEED = 0xFFFFFFFF

_PARAM_PREFIX = "tether-param:"


class ParamError(TetherError, ValueError):
    """A sampling parameter is invalid; ``param`` is its name as llama.cpp spells it."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def _call(fn: Any, *args: Any, error: type[TetherError] = TetherError) -> Any:
    try:
        return call(fn, *args, error=error)
    except TetherError as exc:
        msg = str(exc)
        if msg.startswith(_PARAM_PREFIX):
            d = json.loads(msg[len(_PARAM_PREFIX):])
            raise ParamError(d["message"], d["param"]) from None
        raise


def _bias_value(v: Any) -> Any:
    if v is False:
        return False
    f = float(v)
    if f == -math.inf:
        return False  # llama.cpp's server: false bans the token; JSON has no -inf
    if not math.isfinite(f):
        raise ParamError(f"sampling: logit_bias = {f}: a bias must be a number below +inf", "logit_bias")
    return f


def _params_json(samplers: str | Sequence[str] | None, seed: int | None, params: Mapping[str, Any]) -> str:
    d: dict[str, Any] = {}
    if samplers is not None:
        d["samplers"] = samplers if isinstance(samplers, str) else list(samplers)
    d["seed"] = DEFAULT_SEED if seed is None else int(seed)
    for k, v in params.items():
        if k == "logit_bias":
            if isinstance(v, Mapping):
                v = {str(int(t)): _bias_value(b) for t, b in v.items()}
            elif v is not None:
                v = [[int(t), _bias_value(b)] for t, b in v]
        elif k == "dry_sequence_breakers" and v is not None:
            v = [str(s) for s in v]
        elif isinstance(v, (np.floating, np.integer)):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            raise ParamError(f"sampling: {k} = {v}: must be a finite number", k)
        d[k] = v
    try:
        return json.dumps(d, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ParamError(f"sampling parameters: {exc}") from None


def _handles(grammar: Any, tokenizer: Any, eos_token_id: Any) -> tuple[int, int, Any]:
    """The native handles of the grammar and vocabulary, and the objects to keep alive."""
    if grammar is not None and not isinstance(grammar, Grammar):
        # Imported here: the processors bring torch and transformers, which `import
        # tether` does not need.
        from .processors import GrammarLogitsProcessor

        if not isinstance(grammar, GrammarLogitsProcessor):
            raise TypeError(
                f"grammar must be a tether GrammarLogitsProcessor (or Grammar), not {type(grammar).__name__}"
            )
        grammar = grammar.grammar
    vocab = Vocabulary.from_hf(tokenizer, eos_token_id) if tokenizer is not None else None
    if vocab is None and grammar is not None:
        vocab = grammar.vocab
    return (grammar._handle if grammar is not None else 0), (vocab._handle if vocab is not None else 0), (grammar, vocab)


class _NativeSampler:
    """What SamplerChain and SamplingLogitsProcessor share: the Go sampler handle,
    made from llama.cpp's parameters (see SamplerChain), and its warnings."""

    def __init__(
        self,
        samplers: str | Sequence[str] = DEFAULT_SAMPLERS,
        *,
        seed: int | None = DEFAULT_SEED,
        grammar: GrammarLogitsProcessor | Grammar | None = None,
        tokenizer: Any = None,
        eos_token_id: int | Iterable[int] | None = None,
        **params: Any,
    ) -> None:
        gh, vh, self._keep = _handles(grammar, tokenizer, eos_token_id)
        self._handle = _call(native.bindings_SamplerNew, _params_json(samplers, seed, params), gh, vh)
        self._n_vocab = 0
        self._lock = threading.Lock()

    @property
    def warnings(self) -> list[str]:
        """Warnings about the configuration (e.g. penalties placed after top_p)."""
        return json.loads(_call(native.bindings_SamplerWarnings, self._handle))

    def __del__(self) -> None:
        _release(self, native.bindings_SamplerClose)


class SamplerChain(_NativeSampler):
    """llama.cpp's sampler chain for one sequence: logit-bias, the samplers in
    ``samplers`` order, then ``dist`` seeded with ``seed`` (mirostat 1/2 replace the
    middle), like ``common_sampler`` in llama.cpp.

    - ``samplers``: names separated by ``;`` (or a list), or llama.cpp's letters
      (``"edskypmxt"``).
    - ``seed``: ``None`` (or 4294967295) draws a random seed.
    - ``grammar``: a tether ``GrammarLogitsProcessor`` (or ``Grammar``): the chain then
      samples, checks the pick against the grammar and, only if refused, masks and
      samples again (llama.cpp's ``common_sampler_sample``); ``grammar_first=True``
      masks first.
    - ``tokenizer``: a transformers fast tokenizer; needed to tokenize
      ``dry_sequence_breakers`` when DRY is on and no grammar is given.

    Call :meth:`sample` with a row of logits, then :meth:`accept` with the token used.

    >>> import numpy as np
    >>> chain = SamplerChain(seed=7, temp=0.0)    # temp <= 0 keeps only the best token
    >>> chain.accept_prompt([1, 2])               # prompt tokens feed the penalties' history
    >>> tok = chain.sample(np.array([0.0, 1.0, 3.0, 2.0], dtype=np.float32)); tok
    2
    >>> chain.accept(tok)
    """


    def describe(self) -> str:
        """The chain as llama.cpp prints it: ``logits -> logit-bias -> ... -> dist``."""
        return json.loads(_call(native.bindings_SamplerDescribe, self._handle))["chain"]

    def sample(self, logits: Any) -> int:
        """Pick the next token from one row of logits (numpy array or CPU/GPU tensor).
        The chain's random generator advances; the token is not recorded: call accept."""
        if hasattr(logits, "detach"):
            logits = logits.detach().float().cpu().numpy()
        row = np.ascontiguousarray(logits, dtype=np.float32).reshape(-1)
        with self._lock:
            self._n_vocab = row.size
            return _call(native.bindings_SamplerSample, self._handle, row.ctypes.data, row.size)

    def accept(self, token_id: int) -> None:
        """Record a generated token (penalties, DRY and the grammar advance).
        A token the grammar refuses raises GrammarError and nothing changes."""
        with self._lock:
            _call(native.bindings_SamplerAccept, self._handle, int(token_id), False, self._n_vocab, error=GrammarError)

    def accept_prompt(self, token_ids: Iterable[int]) -> None:
        """Record prompt tokens: they count for penalties and DRY, not for the grammar
        (llama.cpp accepts the prompt into the sampler the same way)."""
        with self._lock:
            for t in token_ids:
                _call(native.bindings_SamplerAccept, self._handle, int(t), True, self._n_vocab)

    def reset(self) -> None:
        """Forget the history and reseed (a fixed seed gives the same draws again)."""
        _call(native.bindings_SamplerReset, self._handle)


__all__ = ["DEFAULT_SAMPLERS", "DEFAULT_SEED", "ParamError", "SamplerChain"]


def __getattr__(name: str) -> Any:
    # The logits processor subclasses transformers' (which imports torch): it lives in
    # sampling_processor and loads on first use, so `import tether` stays light.
    if name == "SamplingLogitsProcessor":
        from .sampling_processor import SamplingLogitsProcessor

        return SamplingLogitsProcessor
    raise AttributeError(f"module 'tether.sampling' has no attribute {name!r}")
