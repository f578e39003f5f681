package engine

import (
	"fmt"
	"strings"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// Raw-byte elements (gbnf.Element{Kind: gbnf.Byte}: bnf_sampler's \xHH bytes that
// are not part of a UTF-8 character, see gbnf.ParseBNF) compile to opByte, whose
// argument indexes Grammar.byteSets.
//
// Semantics. A grammar's language is a set of byte strings: a character element
// (opChar) matches the UTF-8 encoding of one code point of its class, a raw-byte
// element exactly one byte of its set. A raw-byte element is taken only by a stack
// that is between characters (its entry's partial UTF-8 state is empty), and it
// never decodes UTF-8: after it the stack is between characters again, whatever
// the byte was. So a grammar that mixes the two, such as raw F0 then the character
// 'a', is the byte string F0 61 (not UTF-8, because the grammar says so), and a
// character element never completes a character a raw byte started (raw E4 then
// the character "é" is E4 C3 A9; the continuation bytes of a character begun raw
// must be raw too: raw E4 BD A0 is the bytes of "你"). Each stack carries its
// own partial state, so stacks inside a character and stacks on a raw byte live
// side by side in one configuration and step independently; the byte-level step
// (arena.stepCompute) is exact for that language, and masks with it.
//
// The analyses that reason in characters rather than bytes treat a raw-byte
// element as a one-byte "character" of the byte kinds (byteKind) of its set, and
// give up (the exact byte walk decides) where that is not sound:
//
//   - mask plans (planFor) walk stacks with a raw byte on top over the whole trie,
//     like stacks inside a character, instead of using a position cache;
//   - the run analysis (run.go) never settles the multi-byte kind 127 through a
//     stack whose raw byte set holds a byte >= 0x80 (kindTo, takesAll), since such
//     an element takes a byte of a character, not a character; ASCII bytes are
//     stepped exactly, with raw bytes in the ASCII signatures (asciiSig, sameKinds);
//   - the run analysis settles a trie subtree only below a character boundary
//     (runAt);
//   - first and follow bytes, rem and minLen count a raw byte as one byte.

// rawByteSet is the set of bytes a raw-byte element takes.
type rawByteSet struct {
	bits  byteSet   // the bytes
	kinds [2]uint64 // the byte kinds (byteKind) of its bytes
	high  bool      // a byte >= 0x80 is in the set
}

func (s *rawByteSet) has(b byte) bool { return s.bits.has(b) }

// ascii returns the set's ASCII bytes, laid out as class.ascii.
func (s *rawByteSet) ascii() *[4]uint32 { return (*[4]uint32)(s.bits[:4]) }

// addByteSet compiles the byte set of raw-byte element e (of rule r) and returns
// its index into g.byteSets (equal sets share one).
func (g *Grammar) addByteSet(e gbnf.Element, r gbnf.Rule) (int32, error) {
	var s rawByteSet
	for _, rg := range e.Ranges {
		if rg.Lo < 0 || rg.Hi > 0xFF || rg.Lo > rg.Hi {
			return 0, &CompileError{Rule: r.Name, Pos: r.Pos,
				Msg: fmt.Sprintf("raw byte range %d..%d is not within 0..255", rg.Lo, rg.Hi)}
		}
		for v := rg.Lo; v <= rg.Hi; v++ {
			s.bits.add(byte(v))
			k := byteKind(byte(v))
			s.kinds[k>>6] |= 1 << (k & 63)
			s.high = s.high || v >= 0x80
		}
	}
	if s.bits == ([8]uint32{}) {
		return 0, &CompileError{Rule: r.Name, Pos: r.Pos, Msg: "dead end: a raw byte element that matches no byte"}
	}
	for i := range g.byteSets {
		if g.byteSets[i].bits == s.bits {
			return int32(i), nil
		}
	}
	g.byteSets = append(g.byteSets, s)
	return int32(len(g.byteSets) - 1), nil
}

// takesASCII reports whether terminal element el (a character or a raw byte)
// takes ASCII byte b between characters.
func (g *Grammar) takesASCII(el elem, b byte) bool {
	switch el.op {
	case opChar:
		return g.classes[el.arg].ascii[b>>5]&(1<<(b&31)) != 0
	case opByte:
		return g.byteSets[el.arg].has(b)
	}
	return false
}

// asciiOf returns the ASCII bytes terminal element el takes (laid out as
// class.ascii), or nil for other elements.
func (g *Grammar) asciiOf(el elem) *[4]uint32 {
	switch el.op {
	case opChar:
		return &g.classes[el.arg].ascii
	case opByte:
		return g.byteSets[el.arg].ascii()
	}
	return nil
}

// kindsOf returns the byte kinds terminal element el takes a byte of (a zero set
// for other elements).
func (g *Grammar) kindsOf(el elem) [2]uint64 {
	switch el.op {
	case opChar:
		return g.classes[el.arg].kinds
	case opByte:
		return g.byteSets[el.arg].kinds
	}
	return [2]uint64{}
}

// rawHigh reports whether el is a raw-byte element taking a byte >= 0x80: a stack
// on it does not take multi-byte characters as characters (see kindTo, takesAll).
func (g *Grammar) rawHigh(el elem) bool {
	return el.op == opByte && g.byteSets[el.arg].high
}

// runAt reports whether the run analysis (walker.walkTrie) may settle the subtree
// below a trie node of byte b. It counts characters from there, taking the
// configuration reached as being between characters exactly when no stack is
// inside one; a raw-byte element breaks that, since it may take a lead byte (or
// a continuation byte) of a character the token is in the middle of and leave its
// stack between characters ('b' then raw C3 over the token "bé"). So in a grammar
// with raw bytes only nodes of ASCII bytes, where a valid UTF-8 path is at a
// character boundary, are settled by runs; the others are walked byte by byte.
func (g *Grammar) runAt(b byte) bool { return b < 0x80 || len(g.byteSets) == 0 }

// describeBytes describes a byte set for Expected, as bnf_sampler writes bytes.
func describeBytes(s *rawByteSet) string {
	var vals []string
	for v := 0; v < 256; v++ {
		if s.has(byte(v)) {
			vals = append(vals, fmt.Sprintf(`'\x%02x'`, v))
		}
	}
	if len(vals) == 1 {
		return "raw byte " + vals[0]
	}
	if len(vals) > 8 {
		vals = append(vals[:8], "...")
	}
	return "a raw byte of " + strings.Join(vals, " ")
}
