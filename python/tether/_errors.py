"""Exception types raised by tether."""

from __future__ import annotations


class TetherError(Exception):
    """Base class of every error tether raises."""


class TokenizerError(TetherError, ValueError):
    """A tokenizer could not be loaded or used: a malformed or missing tokenizer.json,
    text the tokenizer cannot take, a token id outside the vocabulary, or a closed
    tokenizer. The message is the Go core's and says what and where."""


class InternalError(TetherError, RuntimeError):
    """A bug inside tether's Go core (a recovered Go panic). The interpreter is unharmed;
    the message carries the place in the Go code, please report it."""
