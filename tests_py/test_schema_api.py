"""JSON Schema options through the Python API: complete vs prefix matches, exact
types, the dialect, resources, and refusals that name their keyword and pointer."""

from __future__ import annotations

import pytest

import tether
from test_processors import tokenizer_for


@pytest.fixture(scope="module")
def vocab() -> tether.Vocabulary:
    return tether.Vocabulary.from_hf(tokenizer_for("llama3"))


def test_accepts_is_a_complete_match(vocab: tether.Vocabulary) -> None:
    m = tether.Grammar.from_json_schema({"type": "integer", "minimum": 10}, vocab).matcher()
    assert m.accepts("12") and m.accepts("10")
    assert not m.accepts("1"), "1 is only the start of a match"
    assert m.accepts_prefix("1") and m.accepts_prefix("12")
    assert not m.accepts_prefix("a") and not m.accepts("a")
    m.accept_text("1")
    assert m.accepts("5") and not m.accepts("")
    assert m.accepts_prefix(""), "the matcher itself is unchanged by accepts"


def test_exact_types(vocab: tether.Vocabulary) -> None:
    schema = {"required": ["a"]}
    narrowed = tether.Grammar.from_json_schema(schema, vocab).matcher()
    exact = tether.Grammar.from_json_schema(schema, vocab, exact_types=True).matcher()
    assert exact.accepts("12") and exact.accepts('{"a": 1}') and not exact.accepts("{}")
    assert not narrowed.accepts("12") and narrowed.accepts('{"a": 1}')
    gbnf, _ = tether.json_schema_to_gbnf({"const": 1}, exact_types=True)
    one = tether.Grammar(gbnf, vocab).matcher()
    assert one.accepts("1.0") and not one.accepts("1.5")


PROBE = {
    "$id": "http://ex/root.json",
    "definitions": {"a": {"type": "integer"}},
    "type": "object",
    "properties": {"x": {"$id": "http://ex/sub.json", "definitions": {"a": {"type": "string"}}, "$ref": "#/definitions/a"}},
}


def test_draft_decides_a_sibling_id(vocab: tether.Vocabulary) -> None:
    modern = tether.Grammar.from_json_schema(PROBE, vocab).matcher()
    assert modern.accepts('{"x": "a"}') and not modern.accepts('{"x": 1}')
    draft7 = tether.Grammar.from_json_schema(PROBE, vocab, draft="draft-07").matcher()
    assert draft7.accepts('{"x": 1}') and not draft7.accepts('{"x": "a"}')
    with pytest.raises(ValueError, match="draft must be one of"):
        tether.json_schema_to_gbnf(PROBE, draft="draft-99")


def test_resources(vocab: tether.Vocabulary) -> None:
    schema = {"type": "array", "items": {"$ref": "https://example.com/point.json"}}
    with pytest.raises(tether.SchemaError) as e:
        tether.json_schema_to_gbnf(schema)
    assert e.value.keyword == "$ref" and e.value.pointer == "/items"
    point = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    proc = tether.JSONSchemaLogitsProcessor(schema, tokenizer_for("llama3"), resources={"https://example.com/point.json": point})
    m = proc.grammar.matcher()
    assert m.accepts('[{"x": 1}]') and not m.accepts('[{"y": 1}]')
    with pytest.raises(TypeError, match="resources must map URIs"):
        tether.json_schema_to_gbnf(schema, resources=[point])


def test_refusal_names_keyword_and_pointer() -> None:
    with pytest.raises(tether.SchemaError) as e:
        tether.json_schema_to_gbnf({"properties": {"tags": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}}})
    assert e.value.keyword == "uniqueItems" and e.value.pointer == "/properties/tags"


def test_cli_takes_the_same_options(tmp_path) -> None:
    import json
    import subprocess
    from pathlib import Path

    cli = Path(__file__).resolve().parent.parent / "build" / "bin" / "tether"
    assert cli.exists(), "build the CLI with `make build`"
    point = {"type": "object", "properties": {"x": {"type": "integer"}}}
    schema = {"properties": {"p": {"$ref": "https://example.com/point.json"}}, "required": ["p"]}
    (tmp_path / "s.json").write_text(json.dumps(schema))
    (tmp_path / "point.json").write_text(json.dumps(point))
    args = [str(cli), "gbnf", "--json-schema", str(tmp_path / "s.json"), "--exact-types", "--draft", "draft-07",
            "--resource", f"https://example.com/point.json={tmp_path / 'point.json'}"]  # fmt: skip
    out = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    want, _ = tether.json_schema_to_gbnf(schema, exact_types=True, draft="draft-07", resources={"https://example.com/point.json": point})
    assert out.stdout == want
    bad = subprocess.run([*args[:4], "--draft", "draft-99"], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "--draft must be" in bad.stderr


def test_bound_refusal_names_the_keyword_written() -> None:
    with pytest.raises(tether.SchemaError) as e:
        tether.json_schema_to_gbnf('{"type": "object", "properties": {"x": {"type": "number", "exclusiveMinimum": 1e-2000}}}')
    assert e.value.keyword == "exclusiveMinimum" and e.value.pointer == "/properties/x"
