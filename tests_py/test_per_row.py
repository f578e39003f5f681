"""One grammar per prompt row (issue 15): a batch of 4 prompts with 4 different schemas,
under greedy search, sampling and beam search with several return sequences; every output
must be complete and valid for its own prompt's schema. Real model.generate on a tiny
random Llama with the real Llama-3 tokenizer."""

from __future__ import annotations

import json

import jsonschema
import pytest
import torch
from test_processors import model_for, tokenizer_for

import tether

SCHEMAS = [
    {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False},
    {"type": "integer", "minimum": 0, "maximum": 999},
    {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "minItems": 1, "maxItems": 3},
    {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": -5, "maximum": 5}, "tag": {"enum": ["a", "bb"]}},
        "required": ["n", "tag"],
        "additionalProperties": False,
    },
]
PROMPTS = ["A flag:", "A number:", "Some colours:", "A record:"]


def generate_rows(proc: tether.GrammarLogitsProcessor, **kw: object) -> list[tuple[str, bool]]:
    tok, model = tokenizer_for("llama3"), model_for("llama3")
    enc = tok(PROMPTS, return_tensors="pt", padding=True, add_special_tokens=False)
    torch.manual_seed(15)
    with torch.no_grad():
        out = model.generate(**enc, logits_processor=[proc], max_new_tokens=48, **kw)
    eog = set(proc.vocab.eog_token_ids)
    rows = []
    for row in out[:, enc["input_ids"].shape[1] :].tolist():
        ids, ended = [], False
        for t in row:
            if t in eog:
                ended = True
                break
            ids.append(t)
        rows.append((tok.decode(ids), ended))
    return rows


@pytest.mark.parametrize(
    "mode,kw",
    [
        ("greedy", {"do_sample": False}),
        ("sampling", {"do_sample": True, "num_return_sequences": 3, "temperature": 1.5}),
        ("beams", {"do_sample": False, "num_beams": 3, "num_return_sequences": 2}),
    ],
)
def test_each_prompt_row_follows_its_own_schema(mode: str, kw: dict) -> None:
    tok, model = tokenizer_for("llama3"), model_for("llama3")
    proc = tether.JSONSchemaLogitsProcessor(SCHEMAS, tok, whitespace="compact", model=model)
    rows = generate_rows(proc, **kw)
    per = kw.get("num_return_sequences", 1)
    assert len(rows) == len(PROMPTS) * per
    for r, (text, ended) in enumerate(rows):
        schema = SCHEMAS[r // per]
        assert ended, f"{mode} row {r}: no end token after {text!r}"
        jsonschema.validate(json.loads(text), schema)
    # The schemas are told apart: no output of one prompt is valid for every schema.
    for r, (text, _) in enumerate(rows):
        others = [s for i, s in enumerate(SCHEMAS) if i != r // per]
        assert not all(jsonschema.Draft202012Validator(s).is_valid(json.loads(text)) for s in others)


def test_list_of_compiled_grammars_and_regexes() -> None:
    tok, model = tokenizer_for("llama3"), model_for("llama3")
    vocab = tether.Vocabulary.from_hf(tok, model.generation_config.eos_token_id)
    grammars = [tether.Grammar(tether.regex_to_gbnf(p), vocab) for p in (r"yes|no", r"\d{3}", r"[a-c]{2}", r"x{1,3}y")]
    proc = tether.GrammarLogitsProcessor(grammars)
    for r, (text, ended) in enumerate(generate_rows(proc, do_sample=False)):
        assert ended and grammars[r].matcher().accepts(text), (r, text)
    regex = tether.RegexLogitsProcessor([r"yes|no", r"\d{3}", r"[a-c]{2}", r"x{1,3}y"], tok, model=model)
    import re

    for r, (text, ended) in enumerate(generate_rows(regex, do_sample=True)):
        assert ended and re.fullmatch([r"yes|no", r"\d{3}", r"[a-c]{2}", r"x{1,3}y"][r], text), (r, text)


def test_per_row_errors() -> None:
    tok = tokenizer_for("llama3")
    with pytest.raises(ValueError, match="empty list"):
        tether.GrammarLogitsProcessor([], tok)
    with pytest.raises(ValueError, match="empty list"):
        tether.JSONSchemaLogitsProcessor([], tok)
    proc = tether.GrammarLogitsProcessor(['root ::= "a"', 'root ::= "b"', 'root ::= "c"'], tok)
    with pytest.raises(ValueError, match="not a multiple of the 3 grammars"):
        proc(torch.tensor([[1], [1]]), torch.zeros((2, len(tok))))
    other = tether.Vocabulary.from_hf(tok, [tok.convert_tokens_to_ids("<|eot_id|>")])
    with pytest.raises(ValueError, match="share one tokenizer"):
        tether.GrammarLogitsProcessor([tether.Grammar('root ::= "a"', tok), tether.Grammar('root ::= "a"', other)])
