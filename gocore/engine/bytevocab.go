package engine

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// ByteVocabulary is a minimal Vocabulary with no tokenizer behind it, for checking
// text against a grammar without a model: ids 0..Specials-1 are special tokens
// (written "<[i]>"), and the 256 ids after them are the single bytes 0x00..0xFF.
// It is what llama.cpp's grammar test vectors assume, where `<[N]>` in a test string
// is the special token N. If EOG is positive, id EOG-1 is also an end-of-generation
// token (so the zero value has none).
type ByteVocabulary struct {
	Specials int
	EOG      int
}

var byteTokens = func() [256][]byte {
	var t [256][]byte
	for i := range t {
		t[i] = []byte{byte(i)}
	}
	return t
}()

// Size is Specials + 256.
func (v ByteVocabulary) Size() int { return v.Specials + 256 }

// ByteToken is the id of the token for byte b.
func (v ByteVocabulary) ByteToken(b byte) int { return v.Specials + int(b) }

// TokenBytes is empty for special tokens, else the token's single byte.
func (v ByteVocabulary) TokenBytes(id int) []byte {
	if id < v.Specials || id >= v.Size() {
		return nil
	}
	return byteTokens[id-v.Specials]
}

// IsSpecial reports ids below Specials.
func (v ByteVocabulary) IsSpecial(id int) bool { return id >= 0 && id < v.Specials }

// IsEOG reports id EOG-1.
func (v ByteVocabulary) IsEOG(id int) bool { return v.EOG > 0 && id == v.EOG-1 }

// TokenID finds "<[i]>" for special token i.
func (v ByteVocabulary) TokenID(text string) (int, bool) {
	if !strings.HasPrefix(text, "<[") || !strings.HasSuffix(text, "]>") {
		return 0, false
	}
	n, err := strconv.Atoi(text[2 : len(text)-2])
	if err != nil || n < 0 || n >= v.Specials {
		return 0, false
	}
	return n, true
}

// MaxByteSpecials bounds the special tokens of a vocabulary ByteVocabularyFor makes.
const MaxByteSpecials = 1 << 20

// ByteVocabularyFor returns the ByteVocabulary with as many special tokens as grammar
// g and the ids more refer to (at least one). Every token id of g is checked against
// MaxByteSpecials before anything is sized by it: `root ::= <[1000000000]>` is a
// *CompileError naming the rule, not a vocabulary of a billion tokens.
func ByteVocabularyFor(g *gbnf.Grammar, more ...int) (ByteVocabulary, error) {
	specials := 1
	if g == nil {
		return ByteVocabulary{}, &CompileError{Msg: "nil grammar"}
	}
	for _, r := range g.Rules {
		for _, alt := range r.Alts {
			for _, e := range alt {
				if e.Kind != gbnf.Token || e.Name != "" {
					continue
				}
				if e.Token < 0 || e.Token >= MaxByteSpecials {
					return ByteVocabulary{}, &CompileError{Rule: r.Name, Pos: r.Pos,
						Msg: fmt.Sprintf("token id %d is out of range: without a tokenizer, ids 0..%d are accepted", e.Token, MaxByteSpecials-1)}
				}
				specials = max(specials, int(e.Token)+1)
			}
		}
	}
	for _, n := range more {
		if n >= 0 && n < MaxByteSpecials {
			specials = max(specials, n+1)
		}
	}
	return ByteVocabulary{Specials: specials}, nil
}
