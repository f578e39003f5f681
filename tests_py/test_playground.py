"""`tether playground` through a pseudo-terminal (issue 17): type text and <[id]> tokens,
see the allowed tokens (longest-only or all, paged), can-end and the forced continuation,
:undo and :reset — as a user at a terminal would."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ROOT, tokenizer_path

TETHER = ROOT / "build" / "bin" / "tether"
GRAMMAR = "<start>::=<A><B><C>\n<A>::='cryscan'\n<B>::='hex'\n<C>::='wanicca'\n"


class Session:
    """The playground on a pty: send a line, read up to the next prompt."""

    def __init__(self, args: list[str]) -> None:
        if not TETHER.exists():
            pytest.fail(f"{TETHER} missing: run `make build`")
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([str(TETHER), "playground", *args], stdin=slave, stdout=slave, stderr=slave, close_fds=True)
        os.close(slave)
        self.buf = b""

    def read_prompt(self, timeout: float = 60) -> str:
        end = time.time() + timeout
        while b"\n> " not in self.buf and not self.buf.startswith(b"> "):
            left = end - time.time()
            assert left > 0, f"no prompt; got {self.buf!r}"
            r, _, _ = select.select([self.master], [], [], left)
            if r:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    chunk = b""
                assert chunk, f"playground exited; got {self.buf!r}"
                self.buf += chunk
        i = self.buf.index(b"> ") if self.buf.startswith(b"> ") else self.buf.index(b"\n> ") + 1
        out, self.buf = self.buf[:i], self.buf[i + 2 :]
        return out.decode("utf-8", "replace").replace("\r\n", "\n")

    def send(self, line: str) -> str:
        os.write(self.master, line.encode() + b"\n")
        out = self.read_prompt()
        # The terminal echoes the line first.
        first, _, rest = out.partition("\n")
        assert first.strip() == line.strip(), out
        return rest

    def close(self) -> int:
        os.write(self.master, b":quit\n")
        rc = self.proc.wait(timeout=30)
        os.close(self.master)
        return rc


@pytest.fixture
def session(tmp_path: Path):
    g = tmp_path / "grammar.bnf"
    g.write_text(GRAMMAR)
    s = Session(["--grammar", str(g), "--dialect", "bnf", "--tokenizer", str(tokenizer_path("llama3")), "--page", "2"])
    yield s
    if s.proc.poll() is None:
        s.proc.kill()
        s.proc.wait()


def test_playground_session(session: Session) -> None:
    start = session.read_prompt()
    assert "tether playground" in start
    assert 'text: ""' in start and "can end: no" in start
    assert 'forced: "cryscanhexwanicca"' in start
    # Longest only: the one longest token of 'cryscan' (Llama-3 has "cry").
    assert "allowed tokens (longest only): 1" in start and '"cry"' in start

    out = session.send("crys")
    assert 'text: "crys"' in out and 'forced: "canhexwanicca"' in out

    # All allowed tokens, two per page.
    out = session.send(":all")
    assert "allowed tokens (all): 3, showing 1-2" in out and ":more" in out
    out = session.send(":more")
    assert "showing 3-3" in out

    # A token by id: "can" is token 4919 in Llama-3.
    out = session.send("<[4919]>")
    assert 'text: "cryscan"' in out

    out = session.send("hexwan")
    assert 'text: "cryscanhexwan"' in out and 'forced: "icca"' in out

    out = session.send("x")
    assert "rejected" in out

    out = session.send(":undo")
    assert 'text: "cryscan"' in out

    out = session.send("hexwanicca")
    assert "can end: yes" in out and "forced: (none)" in out and "(end)" in out

    out = session.send(":reset")
    assert 'text: ""' in out and "can end: no" in out

    assert session.close() == 0


def test_playground_bad_grammar(tmp_path: Path) -> None:
    g = tmp_path / "bad.bnf"
    g.write_text("<start> ::= <nowhere>\n")
    r = subprocess.run(
        [str(TETHER), "playground", "--grammar", str(g), "--dialect", "bnf", "--tokenizer", str(tokenizer_path("llama3"))],
        capture_output=True, text=True, timeout=60,
    )
    assert r.returncode == 2
    assert '1:13: undefined rule "nowhere"' in r.stderr


def test_validate_dialect_bnf(tmp_path: Path) -> None:
    g = tmp_path / "g.bnf"
    g.write_text(GRAMMAR + "<unused> ::= <unused> 'x' | 'y'\n")  # left recursion is rewritten

    def validate(text: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(TETHER), "validate", "--grammar", str(g), "--dialect", "bnf", "--text", text],
            capture_output=True, text=True, timeout=60,
        )

    ok = validate("cryscanhexwanicca")
    assert ok.returncode == 0, ok.stderr
    short = validate("cryscanhex")
    assert short.returncode == 1 and "the input ends" in short.stderr
    # Without --dialect bnf the same text is not GBNF.
    r = subprocess.run([str(TETHER), "validate", "--grammar", str(g), "--text", "x"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
