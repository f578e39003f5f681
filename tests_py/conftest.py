"""Shared fixtures: the real test tokenizers fetched by `make setup`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER_NAMES = ["llama3", "llama2", "qwen3", "gemma3"]


def tokenizer_dir() -> Path:
    return Path(os.environ.get("TETHER_TOKENIZERS", ROOT / "build" / "tokenizers"))


def tokenizer_path(name: str, file: str = "tokenizer.json") -> Path:
    p = tokenizer_dir() / name / file
    if not p.exists():
        # Never skip: a missing tokenizer is a broken setup, not a passing test.
        pytest.fail(f"test tokenizer missing: {p}; run `make setup` to fetch it")
    return p


@pytest.fixture(params=TOKENIZER_NAMES)
def tokenizer_name(request: pytest.FixtureRequest) -> str:
    return request.param
