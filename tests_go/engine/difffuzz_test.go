package engine_test

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/vocab"
)

// diffGrammar writes a random grammar for the differential fuzz target: literals
// (ASCII, multi-byte, ones that share prefixes), classes (negated, multi-byte,
// emoji), groups nested several deep, alternatives that overlap (the same text
// matched two ways: ambiguity), recursion behind a literal (deep nesting), and
// repetitions with counts, small and large.
func diffGrammar(r *rand.Rand) string {
	lits := []string{"a", "b", "ab", "abc", "the", " ", "\\n", "é", "日本", "😀", "{", "}", "[", "]", ",", "\\\"", "1", "12", "x", "in", " t", "ü", "\\\\"}
	classes := []string{"[a-z]", "[^\"\\n]", "[0-9]", "[à-ÿ]", "[一-龥]", "[^a-z]", "[ -~]", "[a-c]", "[ab]", "[^x]", ".", "[😀-😊]", "[\\x00-\\x7F]", "[^\\x00-\\x7F]", "[a-zA-Z_]"}
	reps := []string{"*", "+", "?", "{0,3}", "{1,2}", "{2}", "{0,40}", "{3,9}", "{2,}", "{0,120}"}
	n := 1 + r.Intn(5)
	var item func(i, depth int, guarded *bool) string
	item = func(i, depth int, guarded *bool) string {
		switch x := r.Intn(12); {
		case x < 4:
			*guarded = true
			return `"` + lits[r.Intn(len(lits))] + `"`
		case x < 7:
			*guarded = true
			return classes[r.Intn(len(classes))]
		case x < 8:
			// A reference: forward references freely, backward (recursion)
			// only behind a literal, so nothing is left-recursive.
			j := i + 1 + r.Intn(n)
			if j >= n {
				if !*guarded {
					*guarded = true
					return `"` + lits[r.Intn(len(lits))] + `"`
				}
				j = r.Intn(n)
			}
			return fmt.Sprintf("r%d", j)
		case x < 10 && depth < 3:
			// A group, maybe repeated, maybe with overlapping alternatives.
			var alts []string
			k := 1 + r.Intn(3)
			for a := 0; a < k; a++ {
				g := *guarded
				alts = append(alts, seq(r, i, depth+1, &g, item))
			}
			if r.Intn(3) == 0 {
				alts = append(alts, alts[0]) // the same text, matched two ways
			}
			s := "(" + strings.Join(alts, " | ") + ")"
			if r.Intn(2) == 0 {
				s += reps[r.Intn(len(reps))]
			}
			return s
		default:
			*guarded = true
			return "(" + `"` + lits[r.Intn(len(lits))] + `" ` + classes[r.Intn(len(classes))] + ")" + reps[r.Intn(len(reps))]
		}
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "r%d ::= ", i)
		alts := 1 + r.Intn(3)
		for a := 0; a < alts; a++ {
			if a > 0 {
				b.WriteString(" | ")
			}
			guarded := false
			b.WriteString(seq(r, i, 0, &guarded, item))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func seq(r *rand.Rand, i, depth int, guarded *bool, item func(int, int, *bool) string) string {
	k := 1 + r.Intn(4)
	parts := make([]string, k)
	for j := range parts {
		parts[j] = item(i, depth, guarded)
	}
	return strings.Join(parts, " ")
}

// FuzzGrammarDifferential compiles a random grammar (chosen by the input's hash)
// for the real Llama-3 vocabulary and walks it with the input's bytes choosing
// among the allowed tokens; at every state it checks the mask, for every token,
// against ReferenceMask (a plain walk of the whole trie from the whole state: no
// position caches, run analysis or grouping), and on a sample against IsAllowed
// and a clone's AcceptToken; end ⇔ can-end; no dead end (something allowed, or
// the end); and that limit states report the limit on every side. Grammars the parser refuses are skipped (they are
// the parser's tests); any panic fails.
func FuzzGrammarDifferential(f *testing.F) {
	for _, s := range []string{"", "a", "json", "deep", "\x00\x01\x02\x03\x04\x05\x06\x07\x08", "bnf0", "bnf3", "bnf6"} {
		f.Add([]byte(s))
	}
	v := llama3Vocab(f)
	mask := make([]uint32, (v.Size()+31)/32)
	f.Fuzz(func(t *testing.T, data []byte) { diffRun(t, v, mask, data) })
}

// diffRun is one input of FuzzGrammarDifferential.
func diffRun(t *testing.T, v *vocab.Vocab, mask []uint32, data []byte) {
	{
		start := time.Now()
		h := fnv.New64a()
		h.Write(data)
		r := rand.New(rand.NewSource(int64(h.Sum64())))
		src := diffGrammar(r)
		g, err := gbnf.Parse(src, gbnf.WithRoot("r0"))
		// One input in three: a bnf_sampler grammar (left recursion, <any!>,
		// <except!>).
		if len(data) > 0 && data[len(data)-1]%3 == 0 {
			src = diffBNFGrammar(r)
			g, err = gbnf.ParseBNF(src, gbnf.WithRoot("r0"))
		}
		if err != nil {
			return
		}
		// Small stack limits keep every state cheap to check token by token
		// and reach limit states often (where every side must report the limit).
		opts := []engine.Option{engine.WithMaxStacks(64)}
		if len(data) > 0 && data[0]%4 == 0 {
			opts = []engine.Option{engine.WithMaxStacks(16)}
		}
		gr, err := engine.Compile(g, v, opts...)
		if err != nil {
			if _, ok := err.(*engine.CompileError); !ok && !isLimit(err) {
				t.Fatalf("grammar:\n%s\ncompile: %T %v", src, err, err)
			}
			return
		}
		m := gr.NewMatcher()
		ref := make([]uint32, len(mask))
		// Up to 8 states, each checked in full; no new state after 2 s of wall
		// time (the fuzzer counts an input over 10 s as a hang, and the machine
		// may be shared).
		for s := 0; s < 8 && time.Since(start) < 2*time.Second; s++ {
			maskErr := m.FillMask(mask)
			refErr := m.ReferenceMask(ref)
			var bad []string
			switch {
			case refErr == nil && maskErr == nil:
				// Every token: the fast mask against the plain walk of the
				// whole trie from the whole state.
				for id := 0; id < v.Size(); id++ {
					if bitSet(mask, id) != bitSet(ref, id) {
						bad = append(bad, fmt.Sprintf("token %d %q: mask %v, reference %v", id, v.TokenBytes(id), bitSet(mask, id), bitSet(ref, id)))
					}
				}
			case refErr != nil && !isLimit(refErr):
				bad = append(bad, fmt.Sprintf("ReferenceMask: %v", refErr))
			}
			// And IsAllowed, AcceptToken, CanEnd on a sample (allowed tokens,
			// end tokens, random ones): the same verdicts, or the limit reported
			// consistently.
			sample := make([]int, 0, 400)
			for id := 0; id < v.Size(); id++ {
				if v.IsEOG(id) || (bitSet(mask, id) && r.Intn(200) == 0) || r.Intn(2000) == 0 {
					sample = append(sample, id)
				}
			}
			bad = append(bad, stateDisagreements(m, v, mask, maskErr, sample, 4)...)
			if len(bad) > 0 {
				t.Fatalf("grammar:\n%s\nstate %d: %d disagreements, first: %v", src, s, len(bad), bad[:min(5, len(bad))])
			}
			if maskErr != nil {
				return
			}
			allowed, err := m.AllowedTokens(nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(allowed) == 0 {
				t.Fatalf("grammar:\n%s\nstate %d: dead end (nothing allowed, cannot end)", src, s)
			}
			var pick uint32
			if k := 1 + s*4; k+4 <= len(data) {
				pick = binary.LittleEndian.Uint32(data[k:])
			} else {
				pick = r.Uint32()
			}
			next := allowed[int(pick%uint32(len(allowed)))]
			if v.IsEOG(next) {
				return
			}
			if err := m.AcceptToken(next); err != nil {
				t.Fatalf("grammar:\n%s\nstate %d: token %d %q in the mask, refused: %v", src, s, next, v.TokenBytes(next), err)
			}
		}
	}
}
