"""The whole chain: Python hands a tokenizer.json to Go, Go encodes and decodes through
the Rust tokenizers library, and the ids equal those of the `tokenizers` Python package
on the same file."""

from __future__ import annotations

import pytest
import tokenizers
from conftest import tokenizer_path

import tether

TEXTS = [
    "Hello, world!",
    "family: 👨\u200d👩\u200d👧\u200d👦, flags 🇩🇪🇯🇵, wave 👋🏽 🎉",
    "日本語のテキスト、中文文本，한국어 텍스트",
    "café naïve Ångström résumé Übergrößenträger",
    'def f(x):\n\treturn {"a": [1, 2.5e-3, None]}  # comment\n',
    "a  b   c\t\t\n\n\n    d      ",
    "   leading spaces and trailing   ",
    "नमस्ते दुनिया مرحبا بالعالم",
    "e\u0301 lone combining: \u0301",
    "",
]


@pytest.mark.parametrize("add_special", [False, True])
def test_ids_match_hf_tokenizers(tokenizer_name: str, add_special: bool) -> None:
    path = tokenizer_path(tokenizer_name)
    ref = tokenizers.Tokenizer.from_file(str(path))
    with tether.Tokenizer.from_file(path) as tok:
        assert tok.vocab_size == ref.get_vocab_size(with_added_tokens=True)
        for text in TEXTS:
            want = ref.encode(text, add_special_tokens=add_special).ids
            got = tok.encode(text, add_special_tokens=add_special)
            assert got == want, f"{tokenizer_name}: ids differ for {text!r}"
            assert tok.decode(got) == ref.decode(want, skip_special_tokens=False), text


def test_from_hf_transformers_tokenizer(tokenizer_name: str) -> None:
    """A transformers fast tokenizer object goes to Go as its tokenizer.json text."""
    from transformers import PreTrainedTokenizerFast

    path = tokenizer_path(tokenizer_name)
    hf = PreTrainedTokenizerFast(tokenizer_file=str(path))
    with tether.Tokenizer.from_hf(hf) as tok:
        for text in TEXTS:
            assert tok.encode(text) == hf(text, add_special_tokens=False)["input_ids"], text


def test_long_text_buffer_growth() -> None:
    """More ids than the first buffer guess: the Go side reports the count, Python retries."""
    ref = tokenizers.Tokenizer.from_file(str(tokenizer_path("llama3")))
    with tether.Tokenizer.from_file(tokenizer_path("llama3")) as tok:
        text = "x " * 5000 + "🎉" * 100
        assert tok.encode(text, add_special_tokens=True) == ref.encode(text).ids
