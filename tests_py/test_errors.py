"""Bad input arrives as a Python exception with a clear message, and the interpreter
lives on. Crash-prone calls run in a subprocess so a crash would show as its exit code."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import tokenizer_path

import tether
from tether._native_call import native


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "tokenizer.json"
    with pytest.raises(tether.TokenizerError, match=r"no such file or directory") as ei:
        tether.Tokenizer.from_file(missing)
    assert str(missing) in str(ei.value)
    assert isinstance(ei.value, ValueError)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ('{"model": {"type": "BPE", ', r"cannot load .*line 1 column"),
        ('{"hello": 1}', r"cannot load"),
        ("", r"is empty"),
        ("[1, 2, 3]", r"cannot load"),
    ],
)
def test_malformed_tokenizer_json(tmp_path: Path, content: str, match: str) -> None:
    p = tmp_path / "tokenizer.json"
    p.write_text(content)
    with pytest.raises(tether.TokenizerError, match=match):
        tether.Tokenizer.from_file(p)
    if content:
        with pytest.raises(tether.TokenizerError, match=r"cannot load"):
            tether.Tokenizer.from_json(content)


def test_bad_text_and_ids() -> None:
    with tether.Tokenizer.from_file(tokenizer_path("llama3")) as tok:
        with pytest.raises(tether.TokenizerError, match=r"NUL character at index 1"):
            tok.encode("a\x00b")
        with pytest.raises(tether.TokenizerError, match=r"bad argument.*surrogate"):
            tok.encode("lone \ud800 surrogate")
        with pytest.raises(tether.TokenizerError, match=r"token id 200000 at position 1 .*size 128256"):
            tok.decode([9906, 200000])
        with pytest.raises(tether.TokenizerError, match=r"token id -1 at position 0"):
            tok.decode([-1])
        assert tok.encode("still works") == [44466, 4375]


def test_closed_and_unknown_handles() -> None:
    tok = tether.Tokenizer.from_file(tokenizer_path("llama3"))
    handle = tok._handle
    tok.close()
    tok.close()  # harmless
    with pytest.raises(tether.TokenizerError, match="closed"):
        tok.encode("x")
    # The Go side itself refuses stale and unknown handles (no segfault, no panic).
    with pytest.raises(RuntimeError, match=rf"tokenizer handle {handle} is closed"):
        native.bindings_TokenizerVocabSize(handle)
    with pytest.raises(RuntimeError, match=r"unknown tokenizer handle 987654321"):
        native.bindings_TokenizerVocabSize(987654321)
    buf = np.zeros(4, dtype=np.uint32)
    with pytest.raises(RuntimeError, match=r"unknown tokenizer handle"):
        native.bindings_TokenizerEncode(987654321, "x", False, buf.ctypes.data, 4)


def test_raw_native_bad_buffers_in_subprocess() -> None:
    """Null and misaligned buffers and negative lengths given straight to the extension
    come back as errors; the child process must exit normally."""
    code = textwrap.dedent(
        f"""
        import numpy as np
        from tether._native_call import native
        h = native.bindings_TokenizerFromFile({str(tokenizer_path("llama3"))!r})
        buf = np.zeros(8, dtype=np.uint32)
        msgs = []
        for args in [(h, "hello", False, 0, 8), (h, "hello", False, buf.ctypes.data + 1, 4)]:
            try:
                native.bindings_TokenizerEncode(*args)
            except RuntimeError as e:
                msgs.append(str(e))
        for args in [(h, buf.ctypes.data, -3, False), (h, 0, 2, False)]:
            try:
                native.bindings_TokenizerDecode(*args)
            except RuntimeError as e:
                msgs.append(str(e))
        print("\\n".join(msgs))
        print("ALIVE")
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "out: null buffer address" in out
    assert "not aligned for uint32" in out
    assert "ids: negative length -3" in out
    assert "ids: null buffer address" in out
    assert out.strip().endswith("ALIVE")


def test_raw_processor_calls_in_subprocess() -> None:
    """The processor's native calls with bad buffers, shapes, dtypes and stale handles
    raise; the child process must exit normally."""
    code = textwrap.dedent(
        f"""
        import json, numpy as np
        from tether._native_call import fast, native
        tj = open({str(tokenizer_path("llama2"))!r}).read()
        v = native.bindings_VocabFromJSON(tj, "", "")
        g = native.bindings_GrammarCompile(v, 'root ::= "a"', "root", "", 0)
        p = native.bindings_ProcessorNew(g)
        ids = np.zeros((1, 2), dtype=np.int64)
        scores = np.zeros((1, 32000), dtype=np.float32)
        masks = np.zeros((1, 1000), dtype=np.uint32)
        I, S, M = ids.ctypes.data, scores.ctypes.data, masks.ctypes.data
        apply = native.bindings_ProcessorStepApply
        calls = [
            lambda: apply(p, 1, 0, 0, 2, 1, 2, S, S, 32000, 32000, "float32"),
            lambda: apply(p, 1, 0, I, 2, 1, -5, S, S, 32000, 32000, "float32"),
            lambda: apply(p, 1, 0, I, 2, 0, 2, S, S, 32000, 32000, "float32"),
            lambda: apply(p, 1, 0, I, 2, 1, 2, S, 0, 32000, 32000, "float32"),
            lambda: apply(p, 1, 0, I, 2, 1, 2, S + 2, S, 32000, 32000, "float32"),
            lambda: apply(p, 1, 0, I, 2, 1, 2, S, S, 32000, 32000, "int8"),
            lambda: apply(p, 1, 0, I, 2, 1, 2, S, S, 16, 16, "float32"),
            lambda: apply(p, 1, 9, I, 2, 1, 2, S, S, 32000, 32000, "float32"),
            lambda: apply(p, 1, 2, I, 2, 1, 2, S, S, 32000, 32000, "float32"),
            lambda: native.bindings_ProcessorFillMasks(p, 1, 0, I, 2, 1, 2, 0, 1000, 32000),
            lambda: native.bindings_ProcessorFillMasks(p, 1, 0, I, 2, 1, 2, M, 1000, 32000),
            lambda: native.bindings_GrammarCompile(v, "root ::= (", "root", "", 0),
            lambda: native.bindings_GrammarCompile(v, 'root ::= "a"', "root", "{{not json", 0),
            lambda: native.bindings_GrammarCompile(v, 'root ::= "a"', "root", "", -1),
            lambda: native.bindings_VocabFromJSON("{{", "", ""),
            lambda: native.bindings_MatcherAcceptToken(123456789, 1),
            lambda: fast.accept_token(123456789, 1),
            lambda: fast.accept_fill(123456789, -1, M, 1, 1000, 0),
            lambda: fast.accept_fill(m, -1, 0, 1, 1000, 0),
            lambda: fast.accept_fill(m, -1, M + 2, 1, 1000, 0),
            lambda: fast.accept_fill(m, -1, M, 1, 1000, 1),
            lambda: fast.accept_fill(m, -1, M, 1, 10, 0),
            lambda: fast.accept_fill(m, 7, M, 1, 1000, 0),
            lambda: fast.fill_count(m, M, 0, 1000, 0),
            lambda: fast.fill_count(123456789, M, 1, 1000, 0),
        ]
        m = native.bindings_MatcherNew(g)
        native.bindings_ProcessorClose(p)
        calls.append(lambda: apply(p, 1, 0, I, 2, 1, 2, S, S, 32000, 32000, "float32"))
        n = 0
        for c in calls:
            try:
                c()
            except RuntimeError as e:
                n += 1
                print(str(e).splitlines()[0][:120])
        print("RAISED", n, "OF", len(calls))
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "RAISED 26 OF 26" in r.stdout, r.stdout
    assert "tether internal error" not in r.stdout, "bad input must be an ordinary error, not a recovered panic"
