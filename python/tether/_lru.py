"""A bounded LRU cache, and the size of the vLLM backend's cache of compiled grammars
(tether.vllm.backend; no vLLM import here, so it is tested without vLLM)."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")

#: Compiled grammars the vLLM backend keeps by default (``TETHER_VLLM_GRAMMAR_CACHE``).
#: A compiled grammar also keeps the token sets of the positions its matchers have
#: reached (measured on MaskBench schemas after their valid instances: 0.35 MB at the
#: median, 6.5 MB at p99, 15 MB for the largest), so 64 is tens of MB in common use.
DEFAULT_GRAMMAR_CACHE = 64


def grammar_cache_size(env: str | None = None) -> int:
    """The cache size ``TETHER_VLLM_GRAMMAR_CACHE`` asks for (compiled grammars; 0 turns
    the cache off), else DEFAULT_GRAMMAR_CACHE.

    >>> grammar_cache_size("8"), grammar_cache_size("0"), grammar_cache_size("") == DEFAULT_GRAMMAR_CACHE
    (8, 0, True)
    """
    raw = os.environ.get("TETHER_VLLM_GRAMMAR_CACHE") if env is None else env
    if raw is None or raw.strip() == "":
        return DEFAULT_GRAMMAR_CACHE
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"TETHER_VLLM_GRAMMAR_CACHE={raw!r}: want a number of grammars (0 turns the cache off)") from None
    if n < 0:
        raise ValueError(f"TETHER_VLLM_GRAMMAR_CACHE={raw!r}: want a number of grammars >= 0")
    return n


class LRUCache(Generic[T]):
    """At most ``size`` values by key, the least recently used one dropped first; safe
    for concurrent use (vLLM compiles grammars on a thread pool). ``get_or_make`` makes
    a missing value outside the lock, so two threads asking for the same new key may
    both make it; the first stored is kept.

    >>> c = LRUCache(2)
    >>> c.get_or_make("a", lambda: 1), c.get_or_make("b", lambda: 2), c.get_or_make("a", lambda: 9)
    (1, 2, 1)
    >>> c.get_or_make("c", lambda: 3), c.get_or_make("b", lambda: 8), len(c)
    (3, 8, 2)
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._items: OrderedDict[Hashable, T] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def get_or_make(self, key: Hashable, make: Callable[[], T]) -> T:
        if self.size <= 0:
            return make()
        with self._lock:
            v = self._items.get(key)
            if v is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return v
            self.misses += 1
        v = make()  # outside the lock: a big schema's compile does not stall the others
        with self._lock:
            kept = self._items.setdefault(key, v)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
            return kept

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
