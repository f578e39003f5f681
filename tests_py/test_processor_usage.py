"""The processor used the ways users use it (issue 13): shared by threads, reused for a
new prompt, given wrong shapes or a wrong tokenizer, lazy after a chat template's
thinking block, with the end tokens generate stops on, without torch.

Everything runs real ``model.generate`` calls on tiny random-weight models sized to
the real tokenizers (see test_processors.py), unless the point is a direct call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import jsonschema
import pytest
import torch
from conftest import ROOT, tokenizer_path
from test_processors import MAX_NEW, SCHEMA, check_json, model_for, tokenizer_for
from transformers import LogitsProcessor, LogitsProcessorList

import tether

SMALL = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer", "minimum": 0, "maximum": 9}},
    "required": ["ok", "n"],
    "additionalProperties": False,
}


def run(name: str, procs: list, prompts: list[str], max_new: int = MAX_NEW, **kw: object) -> list[list[int]]:
    """generate's new tokens per row."""
    tok, model = tokenizer_for(name), model_for(name)
    enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(**enc, logits_processor=LogitsProcessorList(procs), max_new_tokens=max_new, **kw)
    return out[:, enc["input_ids"].shape[1] :].tolist()


# --- 1. one processor shared by threads, reused for new prompts -------------------------

JOBS = [  # (processor index, prompts, generate kwargs)
    (0, ["Answer:"], dict(do_sample=False)),
    (1, ["x"], dict(do_sample=False)),
    (0, ["Give me data about a user", "x"], dict(do_sample=False)),
    (1, ["The output is: ", "Answer:"], dict(do_sample=False)),
    (0, ["The output is: "], dict(do_sample=False, num_beams=3)),
    (1, ["Give me data about a user"], dict(do_sample=False, num_beams=2, num_return_sequences=2)),
    (0, ["x"], dict(do_sample=False, num_beams=2)),
    (1, ["Answer: ok"], dict(do_sample=False)),
]


def test_eight_threads_share_processors_like_sequential_runs() -> None:
    """8 threads, two shared processors (a JSON Schema and a regex), different prompts,
    batch sizes and modes, all at once: every output equals the sequential run's."""
    tok = tokenizer_for("llama3")
    procs = [
        tether.JSONSchemaLogitsProcessor(SCHEMA, tok),
        tether.RegexLogitsProcessor(r"[A-Z]{2}-\d{3,5}(x[a-f0-9]{2})?", tok),
    ]
    want = [run("llama3", [procs[p]], prompts, **kw) for p, prompts, kw in JOBS]
    for _ in range(2):
        got: list[object] = [None] * len(JOBS)
        barrier = threading.Barrier(len(JOBS))

        def work(i: int) -> None:
            p, prompts, kw = JOBS[i]
            try:
                barrier.wait(timeout=60)
                got[i] = run("llama3", [procs[p]], prompts, **kw)
            except BaseException as e:  # reported below
                got[i] = e

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(JOBS))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert not any(t.is_alive() for t in threads), "a generate call hung"
        for i, (g, w) in enumerate(zip(got, want)):
            assert not isinstance(g, BaseException), f"job {i} raised {g!r}"
            assert g == w, f"job {i} differs from its sequential run"
    assert procs[0].rejected == 0 and procs[1].rejected == 0
    matcher = procs[0].grammar.matcher()
    eog = set(procs[0].vocab.eog_token_ids)
    for row in want[0] + want[2]:
        ids = row[: next((i for i, t in enumerate(row) if t in eog), len(row))]
        check_json(tok.decode(ids), len(ids) < len(row), matcher)


@pytest.mark.parametrize("first_new", [1, 5])
def test_new_prompt_extending_the_last_starts_over(first_new: int) -> None:
    """"Answer:" then "Answer: ok" through one processor: the second call starts at the
    grammar's start (as a fresh processor does), not after " ok"."""
    tok = tokenizer_for("llama3")
    grammar = 'root ::= " ok" [a-z]{1,4} | "yes" | "no"'
    first, second = tok("Answer:")["input_ids"], tok("Answer: ok")["input_ids"]
    assert second[: len(first)] == first and len(second) == len(first) + 1, "the hard case: one token more"
    shared = tether.GrammarLogitsProcessor(grammar, tok)
    run("llama3", [shared], ["Answer:"], max_new=first_new)
    again = run("llama3", [shared], ["Answer: ok"], max_new=8)
    fresh = run("llama3", [tether.GrammarLogitsProcessor(grammar, tok)], ["Answer: ok"], max_new=8)
    assert again == fresh
    text = tok.decode([t for t in again[0] if t not in shared.vocab.eog_token_ids])
    assert text and shared.grammar.matcher().accepts_prefix(text), text


def test_direct_calls_continue_or_start_over() -> None:
    """Outside generate, a call one token longer than the last continues it; anything
    else starts over; reset() starts over too."""
    tok = tokenizer_for("llama3")
    proc = tether.GrammarLogitsProcessor('root ::= "ab" | "ok"', tok)
    prompt = tok("Answer:")["input_ids"]
    a, b = tok.convert_tokens_to_ids(["a", "b"])
    scores = torch.zeros((1, len(tok)))

    def allowed(ids: list[int]) -> set[str]:
        out = proc(torch.tensor([ids]), scores)
        return {tok.decode([i]) for i in torch.isfinite(out[0]).nonzero().flatten().tolist()}

    assert allowed(prompt) >= {"a", "o", "ok"}
    assert allowed(prompt + [a]) == {"b"}
    assert "a" in allowed(prompt + [a, b, a]), "two tokens more: a new call, from the start"
    proc.reset()
    assert allowed(prompt + [a]) >= {"a", "o"}, "after reset the whole input is the prompt"


# --- 2. shapes, dtypes, widths -------------------------------------------------------------


def test_bad_shapes_and_types_raise_in_process() -> None:
    tok = tokenizer_for("llama3")
    proc = tether.GrammarLogitsProcessor('root ::= "a"', tok)
    v = len(tok)
    ids = torch.tensor([[1, 2]])
    cases = [
        (torch.tensor([[1, 2], [3, 4]]), torch.zeros((1, v)), ValueError, r"scores has 1 rows but input_ids has 2"),
        (ids, torch.zeros((2, v)), ValueError, r"scores has 2 rows but input_ids has 1"),
        (ids, torch.zeros((1, 1, v)), ValueError, r"scores must be 2-D"),
        (torch.tensor([1, 2]), torch.zeros((1, v)), ValueError, r"input_ids must be 2-D"),
        (ids, torch.zeros((1, v - 1)), ValueError, rf"{v - 1} columns, fewer than the tokenizer's {v} ids"),
        (ids, torch.zeros((1, v), dtype=torch.int32), TypeError, r"floating-point"),
        (ids.float(), torch.zeros((1, v)), TypeError, r"integer token ids"),
        (ids.tolist(), torch.zeros((1, v)), TypeError, r"torch tensors"),
    ]
    for i, s, exc, match in cases:
        with pytest.raises(exc, match=match):
            proc(i, s)
    out = proc(ids, torch.zeros((1, v + 5)))  # a padded model vocabulary is fine
    assert torch.isfinite(out).sum() == 1


def test_model_width_is_enforced() -> None:
    llama, qwen = tokenizer_for("llama3"), tokenizer_for("qwen3")
    with pytest.raises(ValueError, match=r"model's vocabulary \(128256 ids\) is smaller than the tokenizer's \(151669\)"):
        tether.GrammarLogitsProcessor('root ::= "a"', qwen, model=model_for("llama3"))
    proc = tether.GrammarLogitsProcessor('root ::= "a"', llama, model=model_for("llama3"))
    with pytest.raises(ValueError, match=r"scores has 128300 columns but the model's vocabulary has 128256"):
        proc(torch.tensor([[1]]), torch.zeros((1, 128300)))
    # A Qwen-tokenizer processor in a Llama model's generate: refused, not garbage.
    wrong = tether.JSONSchemaLogitsProcessor(SMALL, qwen)
    with pytest.raises(ValueError, match=r"128256 columns, fewer than the tokenizer's 151669 ids"):
        run("llama3", [wrong], ["Answer:"], max_new=3)


def test_shape_mismatch_guard_in_subprocess() -> None:
    """The input that used to corrupt the heap (more input_ids rows than scores rows),
    and raw native calls with extents that disagree: errors, and the interpreter lives."""
    code = textwrap.dedent(
        f"""
        import numpy as np, torch
        from transformers import PreTrainedTokenizerFast
        import tether
        from tether._native_call import native
        tok = PreTrainedTokenizerFast(tokenizer_file={str(tokenizer_path("llama2"))!r})
        proc = tether.GrammarLogitsProcessor('root ::= "a"', tok)
        try:
            proc(torch.zeros((64, 3), dtype=torch.long), torch.zeros((1, 32000)))
        except ValueError as e:
            print("ValueError:", e)
        h, ids = proc._handle, np.zeros(6, dtype=np.int64)
        s = np.zeros(32000, dtype=np.float32)
        for args in [
            (h, 1, 0, ids.ctypes.data, 6, 64, 3, s.ctypes.data, s.ctypes.data, 32000, 32000, "float32"),
            (h, 1, 0, ids.ctypes.data, 6, 2, 3, s.ctypes.data, s.ctypes.data, 32000, 32000, "float32"),
            (h, 1, 0, ids.ctypes.data, 3, 1, 3, s.ctypes.data, s.ctypes.data, 32000, 16000, "float32"),
        ]:
            try:
                native.bindings_ProcessorStepApply(*args)
            except RuntimeError as e:
                print("RuntimeError:", str(e).splitlines()[0])
        print("ALIVE")
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "ValueError: scores has 1 rows but input_ids has 64" in r.stdout
    assert r.stdout.count("RuntimeError:") == 3, r.stdout
    assert "input_ids: buffer of 6 values for shape [64, 3]" in r.stdout
    assert "scores: buffer of 32000 values for 1 rows of width 16000" in r.stdout
    assert r.stdout.strip().endswith("ALIVE")


# --- 3. lazy grammars and chat templates ----------------------------------------------------


def qwen3_chat_tokenizer():
    tok = tokenizer_for("qwen3")
    cfg = json.loads(tokenizer_path("qwen3", "tokenizer_config.json").read_text())
    tok.chat_template = cfg["chat_template"]
    return tok


def test_qwen3_chat_template_without_thinking() -> None:
    """enable_thinking=False ends the prompt with an empty thinking block; after="</think>"
    then constrains from the first generated token, and the output is schema-valid JSON."""
    tok = qwen3_chat_tokenizer()
    model = model_for("qwen3")
    messages = [{"role": "user", "content": "Is it ok? Answer in JSON."}]
    prompt = tok.apply_chat_template(messages, add_generation_prompt=True, enable_thinking=False, tokenize=False)
    assert prompt.rstrip().endswith("</think>"), prompt
    proc = tether.JSONSchemaLogitsProcessor(
        SMALL, tok, whitespace="compact", triggers=tether.Triggers(after="</think>"), model=model
    )
    enc = tok([prompt], return_tensors="pt", add_special_tokens=False)
    for kw in (dict(do_sample=False), dict(do_sample=True, temperature=1.5, num_return_sequences=3)):
        torch.manual_seed(3)
        with torch.no_grad():
            out = model.generate(**enc, logits_processor=[proc], max_new_tokens=30, **kw)
        for row in out[:, enc["input_ids"].shape[1] :].tolist():
            assert row[-1] in proc.vocab.eog_token_ids or tok.pad_token_id in row, "ended"
            end = next(i for i, t in enumerate(row) if t in proc.vocab.eog_token_ids)
            jsonschema.validate(json.loads(tok.decode(row[:end])), SMALL)
    # With thinking on, the prompt leaves the block to the model: free until </think>.
    thinking = tok.apply_chat_template(messages, add_generation_prompt=True, enable_thinking=True, tokenize=False)
    ids = torch.tensor([tok(thinking, add_special_tokens=False)["input_ids"]])
    assert torch.isfinite(proc(ids, torch.zeros((1, model.config.vocab_size)))[0, : len(tok)]).all()


def test_trigger_words_in_the_prompt_do_not_fire() -> None:
    """Words match generated text only (llama.cpp): a trigger word at the end of the
    prompt leaves the output free until the model writes the word itself."""
    tok = tokenizer_for("llama3")
    proc = tether.GrammarLogitsProcessor(
        'root ::= "<call>" [0-9]+', tok, triggers=tether.Triggers(words=["<call>"])
    )
    ids = torch.tensor([tok("Thinking... <call>")["input_ids"]])
    assert torch.isfinite(proc(ids, torch.zeros((1, len(tok))))).all()


# --- 4. end tokens ------------------------------------------------------------------------------


class Prefer(LogitsProcessor):
    """Pushes one token to the top, as a model that likes it would."""

    def __init__(self, token: int) -> None:
        self.token = token

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        scores = scores.clone()
        scores[:, self.token] += 1000.0
        return scores


def test_llama3_stops_at_the_first_end_token_generate_knows() -> None:
    tok = tokenizer_for("llama3")
    model = model_for("llama3")
    eot, end_of_text = tok.convert_tokens_to_ids(["<|eot_id|>", "<|end_of_text|>"])
    assert model.generation_config.eos_token_id == eot  # what generate stops on
    grammar = 'root ::= "ok"'
    # The default set includes <|end_of_text|>: a model that prefers it never stops.
    default = tether.GrammarLogitsProcessor(grammar, tok)
    assert {eot, end_of_text} <= set(default.vocab.eog_token_ids)
    row = run("llama3", [Prefer(end_of_text), default], ["Answer:"], max_new=8)[0]
    first = row.index(end_of_text)
    assert tok.decode(row[:first]) == "ok"
    assert row[first:] == [end_of_text] * (8 - first), "generate does not stop on <|end_of_text|>"
    # Given the model (or its generation_config), the processor offers exactly its ids.
    for kw in (dict(model=model), dict(generation_config=model.generation_config)):
        proc = tether.GrammarLogitsProcessor(grammar, tok, **kw)
        assert proc.vocab.eog_token_ids == [eot]
        row = run("llama3", [Prefer(end_of_text), proc], ["Answer:"], max_new=8)[0]
        assert tok.decode(row[:-1]) == "ok" and row[-1] == eot, row
    # eos_token_id= replaces the set (it used to add to it).
    only = tether.GrammarLogitsProcessor(grammar, tok, eos_token_id=[end_of_text])
    assert only.vocab.eog_token_ids == [end_of_text]
    row = run("llama3", [Prefer(eot), only], ["Answer:"], max_new=8, eos_token_id=end_of_text)[0]
    assert row[-1] == end_of_text and tok.decode(row[:-1]) == "ok"


def test_generation_config_without_eos_is_refused() -> None:
    from transformers import GenerationConfig

    with pytest.raises(ValueError, match=r"no eos_token_id"):
        tether.GrammarLogitsProcessor('root ::= "a"', tokenizer_for("llama3"), generation_config=GenerationConfig())


# --- 5. wrong inputs -----------------------------------------------------------------------------


def test_wrong_inputs_are_type_and_value_errors() -> None:
    tok = tokenizer_for("llama3")
    with pytest.raises(TypeError, match=r"write words=\['<tool_call>'\]"):
        tether.Triggers(words="<tool_call>")
    with pytest.raises(TypeError, match=r"patterns=\.\.\.\) takes a list of strings"):
        tether.Triggers(patterns=r"\d+")
    with pytest.raises(TypeError, match=r"tokens=\.\.\.\)\[0\] must be an int token id, not float"):
        tether.Triggers(tokens=[1.5])
    with pytest.raises(ValueError, match=r"nothing to wait for"):
        tether.Triggers()
    g = tether.Grammar('root ::= "ab"', tok)  # GBNF first, then a tokenizer ...
    assert g.matcher().accepts("ab")
    assert tether.Grammar('root ::= "ab"', g.vocab).vocab is g.vocab  # ... or a Vocabulary
    with pytest.raises(TypeError, match=r"takes a transformers fast tokenizer .* or a tether.Vocabulary, not str"):
        tether.Grammar('root ::= "a"', "llama3")
    with pytest.raises(TypeError, match=r"not dict"):
        tether.Grammar({"type": "string"}, tok)
    m = g.matcher()
    for bad in (1.5, True, "1", None):
        with pytest.raises(TypeError, match=r"token_id must be an int token id"):
            m.accept_token(bad)
    with pytest.raises(tether.GrammarError):
        m.accept_token(10**9)
    m.accept_token(tok.convert_tokens_to_ids("ab"))
    assert m.can_end
    with pytest.raises(TypeError, match=r"needs a tokenizer"):
        tether.GrammarLogitsProcessor('root ::= "a"')
    with pytest.raises(TypeError, match=r"grammar must be GBNF text"):
        tether.GrammarLogitsProcessor(b'root ::= "a"', tok)
    with pytest.raises(ValueError, match=r"whitespace must be"):
        tether.JSONSchemaLogitsProcessor(SMALL, tok, whitespace="none")
    with pytest.raises(TypeError, match=r"eos_token_id takes token ids"):
        tether.GrammarLogitsProcessor('root ::= "a"', tok, eos_token_id="<|eot_id|>")
    with pytest.raises(TypeError, match=r"triggers must be a tether.Triggers"):
        tether.GrammarLogitsProcessor('root ::= "a"', tok, triggers={"words": ["a"]})
    # A compiled Grammar serves a processor directly.
    proc = tether.GrammarLogitsProcessor(g)
    assert torch.isfinite(proc(torch.tensor([[1]]), torch.zeros((1, len(tok))))).sum() >= 1


# --- errors from the core: limits, dead ends ------------------------------------------------------

# Every "x" opens a level that may close in 8 ways next, each at its own grammar
# position: 8 more stacks per "x" (stacks at one position are merged into one, so only
# distinct positions count against the limit).
AMBIGUOUS = "root ::= l0\n" + "".join(
    f'l{i} ::= "x" l{i + 1}? ("y" | "yy" | "yyy" | "yyyy" | "z" | "zz" | "zzz" | "zzzz")?\n' for i in range(15)
) + 'l15 ::= "x"\n'


def test_limit_is_grammar_limit_error() -> None:
    """A state that needs more stacks than the grammar's limit raises GrammarLimitError
    from the processor's call and from Matcher calls; never a mask that leaves tokens out."""
    tok = tokenizer_for("llama3")
    x = tok.convert_tokens_to_ids("x")
    grammar = tether.Grammar(AMBIGUOUS, tok, max_stacks=64)
    proc = tether.GrammarLogitsProcessor(grammar)
    scores = torch.zeros((1, len(tok)))
    with pytest.raises(tether.GrammarLimitError, match=r"limit stacks \(\d+\)"):
        for n in range(16):
            proc(torch.tensor([[1] + [x] * n]), scores)
    m = grammar.matcher()
    with pytest.raises(tether.GrammarLimitError):
        for _ in range(16):
            m.allowed_token_ids()
            m.accept_token(x)
    assert isinstance(tether.GrammarLimitError("x"), tether.TetherError)


def test_dead_end_raises_instead_of_an_all_inf_row() -> None:
    """A state that allows no token and cannot end raises (at compile time once the
    engine rejects such grammars, or at the step that reaches it), never -inf everywhere."""
    tok = tokenizer_for("llama3")
    with pytest.raises(tether.GrammarError, match=r"no token is allowed|dead end"):
        proc = tether.GrammarLogitsProcessor(r'root ::= "a" [^\x00-\U0010FFFF]', tok)
        run("llama3", [proc], ["Answer:"], max_new=4)


# --- 6. one default per option ---------------------------------------------------------------------


def test_defaults_agree_across_entry_points(tmp_path: Path) -> None:
    tok = tokenizer_for("llama3")
    gbnf, _ = tether.json_schema_to_gbnf(SCHEMA)
    assert tether.JSONSchemaLogitsProcessor(SCHEMA, tok).grammar.gbnf == gbnf
    assert tether.json_schema_to_gbnf(SCHEMA, whitespace="bounded")[0] == gbnf
    cli = ROOT / "build" / "bin" / "tether"
    assert cli.exists(), "build the CLI with `make build`"
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    out = subprocess.run([str(cli), "gbnf", "--json-schema", str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == gbnf, "tether gbnf prints the grammar the processor uses"


# --- lazy torch ------------------------------------------------------------------------------------


def test_import_without_torch() -> None:
    code = textwrap.dedent(
        f"""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("torch", "transformers"):
                    raise ImportError("blocked: " + name)
        sys.meta_path.insert(0, Block())
        import tether
        assert "torch" not in sys.modules
        print(tether.json_schema_to_gbnf({{"type": "integer"}})[0].count("::="))
        with tether.Tokenizer.from_file({str(tokenizer_path("llama3"))!r}) as t:
            print(t.encode("hi"))
        print(tether.GrammarLogitsProcessor.__name__)
        print("OK")
        """
    )
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().endswith("OK")
    r = subprocess.run(
        [sys.executable, "-c", "import sys, tether; print('torch' in sys.modules)"],
        capture_output=True, text=True, timeout=300,
    )
    assert r.stdout.strip() == "False", "import tether leaves torch alone even when it is installed"


def test_docstring_examples_run() -> None:
    import doctest

    import tether.grammar

    result = doctest.testmod(tether.grammar, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 4 and result.failed == 0
