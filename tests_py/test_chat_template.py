"""Chat templates: Go (gocore/chat through `tether chat-template`) against transformers.

The real chat templates of Llama-3, Qwen3 and Gemma-3 (the chat_template of the test
tokenizers' tokenizer_config.json) are rendered by both sides for a set of conversations
(system + user, multi-turn with assistant replies, add_generation_prompt true and false,
enable_thinking true/false/unset for Qwen3, tools and tool calls where the template takes
them, content parts for Gemma-3, non-ASCII text, quotes, backslashes, braces and
surrounding whitespace in content) and must be byte-identical to
`apply_chat_template(..., tokenize=False)`. Also checked through the CLI:

- a template's raise_exception (Gemma-3's role alternation) is an error on both sides,
  with the template's message and line;
- the rendered prompt encodes without a second BOS: `tether generate --chat` on a tiny
  random Llama with the Llama-3 tokenizer and template has exactly the prompt ids of
  `apply_chat_template(tokenize=True)`, a JSON-Schema-constrained chat call gives valid
  JSON, and generation stops on an id listed in generation_config.json's eos_token_id;
- the errors for a model directory without a template and for bad messages files.

The CLI is ROOT/build/bin/tether (`make build`; `make test` builds it first).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import torch
import transformers
from conftest import ROOT, tokenizer_path

TETHER = ROOT / "build" / "bin" / "tether"
MODELS = ["llama3", "qwen3", "gemma3"]


def run_tether(*args: str, timeout: int = 120) -> subprocess.CompletedProcess[bytes]:
    if not TETHER.exists():
        pytest.fail(f"{TETHER} missing: run `make build`")
    return subprocess.run([str(TETHER), *args], capture_output=True, timeout=timeout, check=False)


def tether_ok(*args: str, timeout: int = 120) -> bytes:
    proc = run_tether(*args, timeout=timeout)
    assert proc.returncode == 0, f"tether {args[0]} failed ({proc.returncode}):\n{proc.stderr.decode()}"
    return proc.stdout


def model_dir(name: str) -> Path:
    d = tokenizer_path(name, "tokenizer_config.json").parent
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    assert isinstance(cfg.get("chat_template"), str), f"{name}: tokenizer_config.json has no chat_template"
    return d


_TOKENIZERS: dict[str, Any] = {}


def hf_tokenizer(name: str) -> Any:
    if name not in _TOKENIZERS:
        _TOKENIZERS[name] = transformers.AutoTokenizer.from_pretrained(str(model_dir(name)))
    return _TOKENIZERS[name]


TRICKY = "Quotes \"double\" and 'single', a back\\slash, {{ braces }} {% raw %}, ünïcødé, 日本語, emoji 🦀\tTab"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather at a place & time <now>",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "Zürich or \"Paris\""},
                    "days": {"type": "integer", "minimum": 1, "maximum": 7},
                    "units": {"enum": ["c", "f"], "default": None},
                },
                "required": ["city"],
            },
        },
    },
    {"type": "function", "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}}},
]

# name -> (messages, tools or None); each is rendered with and without the generation prompt.
CONVERSATIONS: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = {
    "user": ([{"role": "user", "content": "Hello!"}], None),
    "system_user": (
        [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is 2+2?"}],
        None,
    ),
    "multi_turn": (
        [
            {"role": "system", "content": "You answer in JSON."},
            {"role": "user", "content": "Name a colour."},
            {"role": "assistant", "content": '{"colour": "red"}'},
            {"role": "user", "content": "Another one."},
            {"role": "assistant", "content": '{"colour": "blue"}'},
            {"role": "user", "content": "And a third?"},
        ],
        None,
    ),
    "tricky_content": (
        [
            {"role": "system", "content": "  Leading and trailing whitespace  \n"},
            {"role": "user", "content": TRICKY},
            {"role": "assistant", "content": "Réponse « ça va » — 'ok' \"ok\"\n\nline two"},
            {"role": "user", "content": "\n\nnewlines first, then ```code```\n"},
        ],
        None,
    ),
    "empty_content": ([{"role": "user", "content": ""}], None),
}

QWEN3_CONVERSATIONS: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = {
    "think_history": (
        [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "<think>\nThe user greets.\n</think>\n\nHello!"},
            {"role": "user", "content": "Bye"},
        ],
        None,
    ),
    "think_last_assistant": (
        [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "<think>\nshort\n</think>\n\nHello!"},
        ],
        None,
    ),
    "reasoning_content_field": (
        [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello!", "reasoning_content": "Greet back."},
        ],
        None,
    ),
    "tools": (
        [
            {"role": "system", "content": "Use tools when needed."},
            {"role": "user", "content": "Weather in Zürich for 3 days?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "days": 3}}},
                    {"type": "function", "function": {"name": "noop", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "content": '{"temp": 21.5, "sky": "clear"}'},
            {"role": "tool", "content": "ok"},
            {"role": "assistant", "content": "Sunny, 21.5 °C."},
            {"role": "user", "content": "Thanks"},
        ],
        TOOLS,
    ),
    "tools_no_system": ([{"role": "user", "content": "What can you do?"}], TOOLS),
}

GEMMA3_CONVERSATIONS: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = {
    "content_parts": (
        [
            {"role": "system", "content": [{"type": "text", "text": "Be kind."}]},
            {"role": "user", "content": [{"type": "text", "text": " Describe: "}, {"type": "image"}, {"type": "text", "text": "ok?"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Sure."}]},
            {"role": "user", "content": "Thanks"},
        ],
        None,
    ),
}


def all_conversations(model: str) -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]] | None]]:
    convs = dict(CONVERSATIONS)
    if model != "gemma3":  # Gemma-3's template has no tools; Llama-3's ignores them (checked below)
        convs["system_user_tools"] = (CONVERSATIONS["system_user"][0], TOOLS)
    convs.update(QWEN3_CONVERSATIONS if model == "qwen3" else {})
    convs.update(GEMMA3_CONVERSATIONS if model == "gemma3" else {})
    return convs


def cases() -> list[Any]:
    out = []
    for model in MODELS:
        for conv in all_conversations(model):
            for gen in (True, False):
                for thinking in [None, True, False] if model == "qwen3" else [None]:
                    name = f"{model}-{conv}-{'gen' if gen else 'nogen'}"
                    if thinking is not None:
                        name += "-think" if thinking else "-nothink"
                    out.append(pytest.param(model, conv, gen, thinking, id=name))
    return out


def go_render(
    model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, gen: bool,
    thinking: bool | None, tmp: Path,
) -> bytes:
    mf = tmp / "messages.json"
    mf.write_text(json.dumps(messages, ensure_ascii=False), encoding="utf-8")
    args = ["chat-template", "--model", str(model_dir(model)), "--messages", str(mf)]
    if tools is not None:
        tf = tmp / "tools.json"
        tf.write_text(json.dumps(tools, ensure_ascii=False), encoding="utf-8")
        args += ["--tools", str(tf)]
    if not gen:
        args.append("--no-generation-prompt")
    if thinking is not None:
        args.append("--enable-thinking" if thinking else "--no-thinking")
    return tether_ok(*args)


def hf_render(
    model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, gen: bool,
    thinking: bool | None,
) -> str:
    kwargs: dict[str, Any] = {}
    if thinking is not None:
        kwargs["enable_thinking"] = thinking
    return hf_tokenizer(model).apply_chat_template(
        messages, tools=tools, add_generation_prompt=gen, tokenize=False, **kwargs
    )


@pytest.mark.parametrize("model,conv,gen,thinking", cases())
def test_render_matches_transformers(model: str, conv: str, gen: bool, thinking: bool | None, tmp_path: Path) -> None:
    messages, tools = all_conversations(model)[conv]
    want = hf_render(model, messages, tools, gen, thinking)
    got = go_render(model, messages, tools, gen, thinking, tmp_path).decode("utf-8")
    assert got == want


def test_cases_cover_what_they_claim() -> None:
    """The matrix is not vacuous: the options change the text where the template reads them."""
    msgs, _ = CONVERSATIONS["system_user"]
    for model in MODELS:
        assert hf_render(model, msgs, None, True, None) != hf_render(model, msgs, None, False, None)
    assert hf_render("qwen3", msgs, None, True, False) != hf_render("qwen3", msgs, None, True, None)
    assert hf_render("qwen3", msgs, TOOLS, True, None) != hf_render("qwen3", msgs, None, True, None)
    assert "get_weather" in hf_render("qwen3", *QWEN3_CONVERSATIONS["tools"], True, None)
    assert hf_render("llama3", msgs, TOOLS, True, None) == hf_render("llama3", msgs, None, True, None)


def test_user_and_assistant_flags_keep_command_line_order(tmp_path: Path) -> None:
    msgs = CONVERSATIONS["multi_turn"][0]
    args = ["chat-template", "--model", str(model_dir("qwen3")), "--system", msgs[0]["content"]]
    for m in msgs[1:]:
        args += [f"--{m['role']}", m["content"]]
    got = tether_ok(*args).decode()
    assert got == hf_render("qwen3", msgs, None, True, None)


def test_raise_exception_is_an_error_with_its_message_and_line(tmp_path: Path) -> None:
    msgs = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    with pytest.raises(Exception, match="Conversation roles must alternate") as exc:
        hf_render("gemma3", msgs, None, True, None)
    assert type(exc.value).__name__ == "TemplateError"
    mf = tmp_path / "m.json"
    mf.write_text(json.dumps(msgs))
    proc = run_tether("chat-template", "--model", str(model_dir("gemma3")), "--messages", str(mf))
    assert proc.returncode == 2
    src = json.loads((model_dir("gemma3") / "tokenizer_config.json").read_text())["chat_template"]
    line = 1 + src[: src.index("raise_exception(\"Conversation")].count("\n")
    assert (
        f"chat template, line {line}: the template raised an exception: "
        "Conversation roles must alternate user/assistant/user/assistant/..."
    ) in proc.stderr.decode()
    assert proc.stdout == b""


def test_prompt_tokens_have_one_bos(tmp_path: Path) -> None:
    """What generate --chat encodes: the rendered text without added special tokens."""
    for model in ("llama3", "gemma3"):
        tok = hf_tokenizer(model)
        msgs = CONVERSATIONS["system_user"][0]
        text = go_render(model, msgs, None, True, None, tmp_path)
        f = tmp_path / "prompt.txt"
        f.write_bytes(text)
        # Exit status 1: the decoded text leaves out the special tokens, so it differs.
        proc = run_tether("tokenize", "--tokenizer", str(model_dir(model) / "tokenizer.json"), "--input", str(f))
        assert proc.returncode in (0, 1), proc.stderr.decode()
        ids = json.loads(proc.stdout)["ids"]
        want = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True, return_dict=False)
        assert ids == want
        assert ids.count(tok.bos_token_id) == 1


# ---- generate --chat on a tiny random Llama with the Llama-3 tokenizer and template ----


@pytest.fixture(scope="module")
def tiny_llama3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tiny-llama3-chat")
    tok = hf_tokenizer("llama3")
    vocab = len(tok)
    cfg = transformers.LlamaConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, vocab_size=vocab, max_position_embeddings=512,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(27)
    model = transformers.LlamaForCausalLM(cfg)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.1)
    model.save_pretrained(d)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(model_dir("llama3") / f, d / f)
    (d / "generation_config.json").unlink(missing_ok=True)
    return d


def chat_generate(d: Path, *extra: str) -> dict[str, Any]:
    out = tether_ok(
        "generate", "--model", str(d), "--chat", "--system", "You are terse.", "--user", "Hi \"you\" ü",
        "--temp", "0", "--json", *extra,
    )
    return json.loads(out)


def test_generate_chat_prompt_ids_match_apply_chat_template(tiny_llama3: Path) -> None:
    msgs = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": 'Hi "you" ü'}]
    want = hf_tokenizer("llama3").apply_chat_template(msgs, add_generation_prompt=True, tokenize=True, return_dict=False)
    res = chat_generate(tiny_llama3, "--max-tokens", "2", "--ignore-eog")
    assert res["prompt_ids"] == want
    assert res["prompt_ids"][:2] != [want[0], want[0]], "a second BOS"


def test_generate_chat_with_json_schema(tiny_llama3: Path, tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 8}}, "required": ["answer"],
              "additionalProperties": False}
    sf = tmp_path / "schema.json"
    sf.write_text(json.dumps(schema))
    res = chat_generate(tiny_llama3, "--json-schema", str(sf), "--max-tokens", "64", "--whitespace", "compact")
    assert res["stop"] in ("eog", "grammar"), res
    jsonschema.validate(json.loads(res["text"]), schema)


def test_generate_stops_on_generation_config_eos_ids(tiny_llama3: Path, tmp_path: Path) -> None:
    free = chat_generate(tiny_llama3, "--max-tokens", "4", "--ignore-eog")
    assert len(free["ids"]) == 4
    stop_id = free["ids"][2]
    assert stop_id not in free["eog_ids"]
    d = tmp_path / "model"
    shutil.copytree(tiny_llama3, d)
    (d / "generation_config.json").write_text(json.dumps({"eos_token_id": [128001, stop_id]}))
    res = chat_generate(d, "--max-tokens", "16")
    assert stop_id in res["eog_ids"] and 128001 in res["eog_ids"]
    if stop_id not in free["ids"][:2]:
        assert res["ids"] == free["ids"][:3]
    assert res["ids"][-1] == stop_id
    assert res["stop"] == "eog"


# ---- Jinja2 semantics the Go side rewrites for (gocore/chat/rewrite.go) ----

SEMANTIC_MESSAGES = [
    {"role": "user", "content": "hi <b> & \u2028 x", "n": 21.5, "one": 1.0, "small": 1e-05, "big": 1e20,
     "k": {"z": 1, "a": [1, 2.5, None, True, "s'q\"d"]}},
    {"role": "assistant", "content": "ok", "reasoning": "because"},
]

SEMANTIC_TEMPLATES = {
    "tojson": "{{ messages[0] | tojson }}",
    "tojson_indent": "{% for m in messages %}{{ m | tojson(indent=4) }}{% endfor %}",
    "tojson_options": "{{ messages[0].k | tojson(separators=(',', ':'), sort_keys=true) }}{{ messages[0] | tojson(ensure_ascii=true) }}",
    "tojson_chain": "{{ messages | map(attribute='role') | list | tojson }}{{ (messages[0].k | tojson)[:5] }}",
    "print_values": "{{ messages[0].n }} {{ messages[0].one }} {{ messages[0].big }} {{ none }} {{ messages[0].k.a }} {{ messages[0].k }}",
    "string_filter": "{{ '<' ~ messages[0].one | string ~ '>' }}{{ messages[0].k.a[2] | string }}",
    "reasoning_alias": "{% for m in messages %}{{ m.thinking }}|{{ m.reasoning_content }}|{{ m.keys() | list }};{% endfor %}",
    "whitespace_across_output": "{%- for m in messages -%}\n  {{ m.role }}: {{ m.content }}{%- if not loop.last %}, {% endif -%}\n{%- endfor -%}",
    "lstrip_trim": "{% for m in messages %}\n    {% if m.role == 'user' %}\n  U {{ m.content }}\n    {% else %}\n  A {{ m.content }}\n    {%- endif %}\n{% endfor %}\n",
    "plus_marks": "  {%+ if true %}x{% endif +%}\n{{ 'y' }}   {% if true %}z{% endif %}",
    "comments_raw": "{# one #}\n  {#- two -#}  a{% raw %} {{ not code }} {% endraw %}\n{#- three #}b",
    "newlines": "a\r\nb\rc{{ 'd' }}\n\n",
    "string_escapes": "{{ 'tab\\tnl\\nq\\'u\\u00e9\\x41\\\\' }}|{{ \"dq\\\"\" }}",
    "dict_literal": "{{ {'a': {'b': [1, {'c': 2}]}} | tojson }}",
}


@pytest.mark.parametrize("name", sorted(SEMANTIC_TEMPLATES))
def test_jinja2_semantics_match_transformers(name: str, tmp_path: Path) -> None:
    src = SEMANTIC_TEMPLATES[name]
    want = hf_tokenizer("llama3").apply_chat_template(SEMANTIC_MESSAGES, chat_template=src, tokenize=False)
    d = tmp_path / "m"
    d.mkdir()
    (d / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>"}))
    (d / "chat_template.jinja").write_bytes(src.encode())
    mf = tmp_path / "messages.json"
    mf.write_text(json.dumps(SEMANTIC_MESSAGES))
    got = tether_ok("chat-template", "--model", str(d), "--messages", str(mf), "--no-generation-prompt").decode()
    assert got == want


# ---- errors ----


def test_no_template_error(tmp_path: Path) -> None:
    d = tmp_path / "base"
    d.mkdir()
    shutil.copy(tokenizer_path("llama2", "tokenizer_config.json"), d / "tokenizer_config.json")
    proc = run_tether("chat-template", "--model", str(d), "--user", "hi")
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert "no chat template" in err and "chat_template.jinja" in err and str(d) in err


def test_chat_template_jinja_file_takes_priority(tmp_path: Path) -> None:
    d = tmp_path / "m"
    d.mkdir()
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(model_dir("llama3") / f, d / f)
    (d / "chat_template.jinja").write_text("{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}")
    assert tether_ok("chat-template", "--model", str(d), "--user", "hé") == "<|begin_of_text|>[user]hé".encode()
    tok = transformers.AutoTokenizer.from_pretrained(str(d))
    assert tok.apply_chat_template([{"role": "user", "content": "hé"}], tokenize=False) == "<|begin_of_text|>[user]hé"


@pytest.mark.parametrize(
    "content,message",
    [
        ('[{"role": "user", "content": "a"}, "hi"]', "messages[1]: must be an object with role and content, not a string"),
        ('[{"role": "user", "content": "a"}, {"content": "b"}]', "messages[1]: has no role"),
        ('[{"role": "user", "content": "a"}, {"role": "assistant", "content": 3}]',
         'messages[1]: (role "assistant") content must be a string or a list of content parts, not a number'),
        ('[{"role": "user", "text": "a"}]', 'messages[0]: (role "user") has no content'),
        ('{"role": "user", "content": "a"}', "must be a JSON list"),
        ("[]", "the list is empty"),
        ('[{"role": "user", "content": "a"},]', "invalid JSON at byte offset"),
    ],
)
def test_bad_messages_file(tmp_path: Path, content: str, message: str) -> None:
    mf = tmp_path / "m.json"
    mf.write_text(content)
    proc = run_tether("chat-template", "--model", str(model_dir("qwen3")), "--messages", str(mf))
    assert proc.returncode == 2
    assert message in proc.stderr.decode()


def test_generate_chat_usage_errors(tmp_path: Path) -> None:
    """Checked before the model loads: the tokenizer folders have no weights."""
    llama3 = str(model_dir("llama3"))
    for args, message in [
        (["--model", llama3, "--prompt", "hi", "--chat", "--user", "hi"], "one of --prompt and --chat"),
        (["--model", llama3, "--chat"], "--chat needs a conversation"),
        (["--model", llama3, "--user", "hi", "--messages", "x.json"], "give --messages or --system/--user/--assistant, not both"),
        (["--model", llama3, "--user", "hi", "--enable-thinking", "--no-thinking"], "not both"),
        (["--model", llama3, "--user", "hi", "--chat-var", "effort=low"], "is not JSON"),
        (["--model", str(tokenizer_path("llama2", "tokenizer_config.json").parent), "--chat", "--user", "hi"], "no chat template"),
    ]:
        proc = run_tether("generate", *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert message in proc.stderr.decode(), (args, proc.stderr)
