"""bnf_sampler's BNF dialect from Python (issue 17): Grammar.from_bnf, dialect="bnf" in
the processors, Matcher.possible_tokens(longest_only=...), inside real model.generate."""

from __future__ import annotations

import pytest
import torch
from test_processors import generate, model_for, tokenizer_for

import tether

SEQUENCE = "<start>::=<A><B><C>\n<A>::='cryscan'\n<B>::='hex'\n<C>::='wanicca'"

# Left-recursive arithmetic, written as bnf_sampler users would (left recursion is
# rewritten by tether).
ARITH_BNF = r"""
<start>  ::= <expr>
<expr>   ::= <expr> '+' <term> | <expr> '-' <term> | <term>
<term>   ::= <term> '*' <factor> | <factor>
<factor> ::= <digit> | '(' <expr> ')'
<digit>  ::= '1' | '2' | '3'
"""

# A string of tokens without '"' then a closing quote (except! semantics).
QUOTED = """<start> ::= '"' <content> '"'
<content> ::= <except!('"')> | <except!('"')> <content>"""


@pytest.mark.parametrize("name", ["llama3", "llama2"])
def test_from_bnf_possible_tokens(name: str) -> None:
    tok = tokenizer_for(name)
    vocab = tether.Vocabulary.from_hf(tok)
    m = tether.Grammar.from_bnf(vocab, SEQUENCE).matcher()
    rest = b"cryscanhexwanicca"
    while rest:
        assert not m.can_end
        everything = m.possible_tokens(longest_only=False)
        listed = m.possible_tokens()
        assert set(listed) <= set(everything)
        # Every allowed token is a prefix of the rest; the listed ones are the longest.
        texts = {i: tok.convert_ids_to_tokens(i) for i in everything}
        assert everything, rest
        best = max(listed, key=lambda i: len(tok.decode([i])))
        assert all(len(tok.decode([i])) <= len(tok.decode([best])) for i in everything), texts
        assert list(everything) == sorted(everything)
        m.accept_token(best)
        rest = rest[len(tok.decode([best]).encode()):]
    assert m.can_end
    assert set(m.possible_tokens()) <= set(vocab.eog_token_ids)


def test_from_bnf_root_and_errors() -> None:
    vocab = tether.Vocabulary.from_hf(tokenizer_for("llama3"))
    g = tether.Grammar.from_bnf(vocab, "<a> ::= 'a'\n<b> ::= 'b'", root="b")
    m = g.matcher()
    assert m.accepts("b") and not m.accepts("a")
    with pytest.raises(tether.GrammarError) as e:
        tether.Grammar.from_bnf(vocab, "<start> ::= 'a' <missing>")
    assert "1:17" in str(e.value) and "missing" in str(e.value)
    # The constructor with dialect="bnf" takes the dialect's default start rule.
    assert tether.Grammar(vocab, "<x> ::= 'x'\n<start> ::= <x> 'y'", dialect="bnf").matcher().accepts("xy")
    with pytest.raises(tether.GrammarError, match="unknown grammar dialect"):
        tether.Grammar(vocab, "<start> ::= 'a'", dialect="ebnf")


def test_any_token_listing() -> None:
    tok = tokenizer_for("llama2")
    vocab = tether.Vocabulary.from_hf(tok)
    m = tether.Grammar.from_bnf(vocab, "<start>::=<sequence>\n<sequence>::=<any!>|<any!><sequence>").matcher()
    everything = m.possible_tokens(longest_only=False)
    assert m.possible_tokens() == everything
    eog = set(vocab.eog_token_ids)
    assert not eog & set(everything)
    assert len(everything) == len(tok) - len(eog)


@pytest.mark.parametrize("name", ["llama3", "llama2"])
def test_generate_with_bnf(name: str) -> None:
    proc = tether.GrammarLogitsProcessor(ARITH_BNF, tokenizer_for(name), dialect="bnf")
    for text, ended in generate(name, proc, ["1+", "x"], do_sample=True, top_k=0):
        m = proc.grammar.matcher()
        m.accept_text(text)
        if ended:
            assert m.can_end, text
        # An independent check: only the grammar's characters, balanced prefix.
        assert set(text) <= set("123+-*()"), text
        assert text.count(")") <= text.count("("), text


def test_generate_with_except() -> None:
    name = "llama3"
    tok = tokenizer_for(name)
    proc = tether.GrammarLogitsProcessor(QUOTED, tok, dialect="bnf")
    enc = tok(["Say:"], return_tensors="pt", add_special_tokens=False)
    torch.manual_seed(1)
    with torch.no_grad():
        out = model_for(name).generate(**enc, logits_processor=[proc], max_new_tokens=12, do_sample=True)
    ids = out[0, enc["input_ids"].shape[1]:].tolist()
    text = tok.decode([i for i in ids if i not in set(proc.vocab.eog_token_ids)])
    assert text.startswith('"')
    # bnf_sampler's except!: the body holds no '"' except as the closing quote.
    body = text[1:]
    assert '"' not in body[:-1] if body.endswith('"') else '"' not in body, text
