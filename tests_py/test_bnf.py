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


# bnf_sampler's README byte example: \xHH bytes that are not UTF-8 on their own are
# raw bytes, so <sequence> allows exactly the tokens made only of F0, A0 and B0.
BYTES_BNF = r"""<byte> ::= '\xf0'|'\xa0'|'\xb0'
<sequence> ::= <byte>|<byte><sequence>
<start> ::= <sequence>"""


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet, reversed: the character each byte is written as."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def exact_token_bytes(tok, name: str) -> dict[int, bytes]:
    """The exact bytes of every ordinary token, from the tokenizer's own pieces (not
    decode(), which is lossy for pieces of characters)."""
    special = set(tok.all_special_ids) | {i for i, t in tok.added_tokens_decoder.items() if t.special}
    out: dict[int, bytes] = {}
    dec = _byte_decoder()
    for i, piece in enumerate(tok.convert_ids_to_tokens(list(range(len(tok))))):
        if i in special or piece is None:
            continue
        if name == "llama3":
            out[i] = bytes(dec[c] for c in piece)
        elif len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
            out[i] = bytes([int(piece[3:5], 16)])
        else:
            out[i] = piece.replace("\u2581", " ").encode()
    return out


@pytest.mark.parametrize("name", ["llama3", "llama2"])
def test_from_bnf_raw_bytes(name: str) -> None:
    tok = tokenizer_for(name)
    m = tether.Grammar.from_bnf(BYTES_BNF, tok).matcher()
    toks = exact_token_bytes(tok, name)
    want = sorted(i for i, b in toks.items() if b and set(b) <= {0xF0, 0xA0, 0xB0})
    allowed = [int(i) for i in m.allowed_token_ids()]
    assert allowed == want
    # The single bytes are there (Llama-2's byte-fallback pieces <0xF0> <0xA0> <0xB0>).
    singles = {toks[i] for i in want if len(toks[i]) == 1}
    assert singles == {b"\xf0", b"\xa0", b"\xb0"}
    if name == "llama2":
        assert set(tok.convert_tokens_to_ids(["<0xF0>", "<0xA0>", "<0xB0>"])) <= set(allowed)
    assert m.possible_tokens(longest_only=False) == want
    assert not m.can_end
    # accept_token takes each listed token, and refuses others.
    for i in want[:50]:
        c = m.clone()
        c.accept_token(i)
        assert c.can_end
    other = [i for i in toks if i not in set(want)]
    for i in other[:: max(1, len(other) // 200)]:
        with pytest.raises(tether.GrammarError):
            m.clone().accept_token(i)
    # Text is refused, with a message that names the raw bytes expected.
    with pytest.raises(tether.GrammarError, match=r"raw byte '\\xf0'"):
        m.clone().accept_text("a")
    m.accept_token(want[0])
    assert set(int(i) for i in m.allowed_token_ids()) == set(want) | set(tether.Vocabulary.from_hf(tok).eog_token_ids)


def test_generate_with_raw_bytes() -> None:
    """A real model.generate under the byte grammar: every generated token is made of
    the raw bytes F0, A0 and B0 (text that is not UTF-8, because the grammar says so)."""
    name = "llama2"
    tok = tokenizer_for(name)
    proc = tether.GrammarLogitsProcessor(BYTES_BNF, tok, dialect="bnf")
    toks = exact_token_bytes(tok, name)
    model = model_for(name)
    inputs = tok(["x"], return_tensors="pt")
    out = model.generate(**inputs, logits_processor=[proc], max_new_tokens=6, do_sample=True, top_k=0,
                         pad_token_id=tok.pad_token_id)
    new = out[0, inputs["input_ids"].shape[1]:].tolist()
    assert new
    eog = set(tether.Vocabulary.from_hf(tok).eog_token_ids)
    for i in new:
        if i in eog:
            break
        assert toks[i] and set(toks[i]) <= {0xF0, 0xA0, 0xB0}, (i, tok.convert_ids_to_tokens(i))


def test_forced_text_stops_at_raw_bytes() -> None:
    """forced_text gives whole UTF-8 characters only: it stops before a raw byte (the
    bytes after it are not dropped and glued on)."""
    tok = tokenizer_for("llama3")
    assert tether.Grammar.from_bnf(r"<start> ::= 'ab' '\xf0' 'cd'", tok).matcher().forced_text() == "ab"
    assert tether.Grammar.from_bnf("<start> ::= 'ab' 'cd'", tok).matcher().forced_text() == "abcd"
