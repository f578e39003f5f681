"""Exception types raised by tether."""

from __future__ import annotations


class TetherError(Exception):
    """Base class of every error tether raises."""


class TokenizerError(TetherError, ValueError):
    """A tokenizer could not be loaded or used: a malformed or missing tokenizer.json,
    text the tokenizer cannot take, a token id outside the vocabulary, or a closed
    tokenizer. The message is the Go core's and says what and where."""


class GrammarError(TetherError, ValueError):
    """A grammar (GBNF text, or one made from a schema or regex) is invalid.

    ``line`` and ``column`` (1-based) point into the grammar text when known."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


class SchemaError(TetherError, ValueError):
    """A JSON Schema cannot be turned into a grammar soundly: ``keyword`` is the keyword
    at fault and ``pointer`` the JSON pointer to where it is in the schema."""

    def __init__(self, message: str, keyword: str | None = None, pointer: str | None = None) -> None:
        super().__init__(message)
        self.keyword = keyword
        self.pointer = pointer


class InternalError(TetherError, RuntimeError):
    """A bug inside tether's Go core (a recovered Go panic). The interpreter is unharmed;
    the message carries the place in the Go code, please report it."""


class GrammarLimitError(TetherError, RuntimeError):
    """The grammar engine hit a resource limit (stacks, work or memory) and cannot
    compute an exact mask for this state. No mask is returned: tether never lets a token
    through that the grammar might refuse. Simplify the grammar (fewer overlapping
    alternatives) or raise the limit where the API offers one."""
