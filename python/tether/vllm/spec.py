"""What a structured-output request asks for, as GBNF text (no vLLM import here)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .._errors import GrammarError
from ..grammar import DEFAULT_WHITESPACE, json_schema_to_gbnf, regex_to_gbnf

#: The request kinds tether serves: a JSON Schema (``json``; ``json_object`` is the
#: schema ``{"type": "object"}``), a regular expression (Go RE2 syntax, matched in full),
#: a GBNF grammar, or a list of strings to choose from.
SPEC_KEYS = ("json", "json_object", "regex", "grammar", "choice")


def _gbnf_literal(s: str) -> str:
    out = []
    for ch in s:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def choice_gbnf(choices: Sequence[str]) -> str:
    """GBNF for exactly one of the given strings.

    >>> choice_gbnf(["yes", 'say "no"'])
    'root ::= "yes" | "say \\\\"no\\\\""'
    """
    if isinstance(choices, str) or not isinstance(choices, Sequence) or not choices:
        raise GrammarError(f"choice takes a non-empty list of strings, not {choices!r}")
    for i, c in enumerate(choices):
        if not isinstance(c, str):
            raise GrammarError(f"choice[{i}] is {type(c).__name__}, not str")
    return "root ::= " + " | ".join(_gbnf_literal(c) for c in choices)


def looks_like_lark(text: str) -> bool:
    """Whether a grammar is Lark (``rule: ...``) rather than GBNF (``rule ::= ...``)."""
    return "::=" not in text and any(":" in line and not line.lstrip().startswith(("#", "//")) for line in text.splitlines())


def grammar_text(kind: str, value: Any, *, whitespace: str = DEFAULT_WHITESPACE) -> str:
    """The GBNF for one request: ``kind`` is one of :data:`SPEC_KEYS`. Raises
    :class:`tether.GrammarError` / :class:`tether.SchemaError` for what tether cannot
    serve exactly (a Lark grammar, a schema keyword it cannot enforce, ...).

    >>> grammar_text("regex", r"\\d{2}").startswith("root")
    True
    """
    if kind == "json":
        schema = json.loads(value) if isinstance(value, str) else value
        if not isinstance(schema, (Mapping, bool)):
            raise GrammarError(f"json takes a JSON Schema (an object), not {type(schema).__name__}")
        return json_schema_to_gbnf(schema, whitespace=whitespace)[0]
    if kind == "json_object":
        return json_schema_to_gbnf({"type": "object"}, whitespace=whitespace)[0]
    if kind == "regex":
        if not isinstance(value, str):
            raise GrammarError(f"regex takes a str, not {type(value).__name__}")
        return regex_to_gbnf(value)
    if kind == "grammar":
        if not isinstance(value, str) or not value.strip():
            raise GrammarError("grammar takes GBNF text (a non-empty str)")
        if looks_like_lark(value):
            raise GrammarError(
                "the tether backend takes GBNF grammars (rule ::= ...), and this looks like a "
                "Lark grammar (rule: ...): write it in GBNF, or use the guidance backend"
            )
        return value
    if kind == "choice":
        choices = json.loads(value) if isinstance(value, str) else value
        return choice_gbnf(choices)
    raise GrammarError(f"the tether backend serves {', '.join(SPEC_KEYS)} requests, not {kind!r}")
