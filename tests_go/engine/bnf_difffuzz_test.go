package engine_test

import (
	"fmt"
	"hash/fnv"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// diffBNFGrammar writes a random grammar in bnf_sampler's dialect for the
// differential fuzz target: terminals, <any!>, <except!('lit')> and
// <except!([rule])>, raw bytes (\xHH that are not UTF-8), and references to any
// rule in any place, so that direct and
// indirect left recursion (through rules that can be empty too) are common. Those
// the parser refuses (a cycle with no way out) are skipped by the target.
func diffBNFGrammar(r *rand.Rand) string {
	lits := []string{"a", "b", "ab", "abc", "the", " ", `\n`, "é", "日本", "{", "}", ",", `\"`, "1", "12", "x", "in", " t",
		// Raw bytes (not UTF-8 on their own), alone and beside characters.
		`\xf0`, `\xa0`, `\xb0`, `\xe4`, `\xbd\xa0`, `\xc3`, `\x80`, `\xff`, `a\xf0`, `\xe6\x97`, `é\x80`}
	excepts := []string{"a", "ar", " ", "e", `\"`, "in", "1", `\xf0`}
	n := 1 + r.Intn(4)
	// One grammar in three is text only (terminals, raw bytes and references),
	// so that masks take the text-level shortcuts (position caches, run
	// analysis) through raw bytes rather than token-level elements.
	kinds := 10
	if r.Intn(3) == 0 {
		kinds = 7
	}
	item := func() string {
		switch x := r.Intn(kinds); {
		case x < 4:
			return "'" + lits[r.Intn(len(lits))] + "'"
		case x < 7:
			return fmt.Sprintf("<r%d>", r.Intn(n))
		case x < 8:
			return "<any!>"
		case x < 9:
			return "<except!('" + excepts[r.Intn(len(excepts))] + "')>"
		default:
			return fmt.Sprintf("<except!([r%d])>", r.Intn(n))
		}
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "<r%d> ::= ", i)
		alts := 1 + r.Intn(3)
		for a := 0; a < alts; a++ {
			if a > 0 {
				b.WriteString(" | ")
			}
			k := r.Intn(4)
			if k == 0 && a == 0 {
				k = 1
			}
			for j := 0; j < k; j++ {
				b.WriteString(item())
				b.WriteByte(' ')
			}
			if k == 0 {
				b.WriteString("''")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// The differential check of FuzzGrammarDifferential on bnf_sampler grammars with
// raw bytes, for a fixed set of inputs (so plain `go test` covers them): every
// state's mask against ReferenceMask token by token, IsAllowed and AcceptToken.
func TestGrammarDifferentialRawBytes(t *testing.T) {
	v := llama3Vocab(t)
	mask := make([]uint32, (v.Size()+31)/32)
	want := 24
	if testing.Short() {
		want = 6
	}
	ran := 0
	for i := 0; ran < want && i < 10000; i++ {
		data := []byte{byte(i), byte(i >> 8), 'r', 'a', 'w', 3}
		h := fnv.New64a()
		h.Write(data)
		r := rand.New(rand.NewSource(int64(h.Sum64())))
		diffGrammar(r)
		src := diffBNFGrammar(r)
		g, err := gbnf.ParseBNF(src, gbnf.WithRoot("r0"))
		if err != nil || !hasKind(g, gbnf.Byte) {
			continue
		}
		ran++
		diffRun(t, v, mask, data)
	}
	require.Equal(t, want, ran)
}

// hasKind reports whether some element of g is of kind k.
func hasKind(g *gbnf.Grammar, k gbnf.Kind) bool {
	for _, r := range g.Rules {
		for _, alt := range r.Alts {
			for _, e := range alt {
				if e.Kind == k {
					return true
				}
			}
		}
	}
	return false
}
