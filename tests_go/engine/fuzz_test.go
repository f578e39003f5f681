package engine_test

import (
	"slices"
	"testing"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
)

// fuzzGrammars cover JSON, UTF-8 classes, token references and ambiguity.
var fuzzGrammars = []string{
	`root ::= "{" ws (str ":" ws val ("," ws str ":" ws val)*)? "}"
val ::= str | [0-9]+ | "[" ws (val ("," ws val)*)? "]" | root
str ::= "\"" ([^"\\] | "\\" ["\\n])* "\""
ws ::= [ \n]?`,
	`root ::= ([à-ÿ] | "日本" | [😀-😊] | [^a-z\n])* "."`,
	`root ::= <[1]> (!<[2]>)* <[2]> "x"?`,
	`root ::= t root | ""
t ::= "a" | "a" t "b"`,
}

// fuzzVocab has whole characters, pieces that end inside UTF-8 characters, stray
// continuation bytes, special tokens and an end-of-generation token.
func fuzzVocab() *listVocab {
	v := newListVocab("{", "}", "\"", ":", ",", " ", "\n", "[", "]", "0", "12", "\"a\"", "\\", "n", "a", "b", "ab", "x", ".",
		"é", "\xc3", "\xa9", "\xe6", "\x97", "\xa5", "\xe6\x97", "日本", "\xf0\x9f", "\x98\x80", "😀", "\x80", "\xff", "\": ", "{\"", "à.")
	v.addSpecial("<s1>", false) // 35
	v.addSpecial("<s2>", false) // 36
	v.addSpecial("</s>", true)  // 37
	return v
}

// FuzzMatcher drives matchers with random tokens, bytes, rollbacks and clones and
// checks, at every step: the mask equals a per-token check over the whole
// vocabulary, end-of-generation is allowed exactly when the grammar can end, padding
// stays clear, refused tokens change nothing, and rollback restores the mask.
func FuzzMatcher(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 11, 3, 4, 0})
	f.Add([]byte{1, 20, 21, 22, 23, 24, 18})
	f.Add([]byte{2, 200, 3, 14, 201, 2, 17})
	f.Add([]byte{3, 14, 14, 14, 15, 250, 2})
	v := fuzzVocab()
	var grs []*engine.Grammar
	for _, src := range fuzzGrammars {
		g, err := gbnf.Parse(src)
		if err != nil {
			f.Fatal(err)
		}
		gr, err := engine.Compile(g, v, engine.WithMaxStacks(256))
		if err != nil {
			f.Fatal(err)
		}
		grs = append(grs, gr)
	}
	// tokens <[1]>, <[2]> of grammar 2 are ids 1 and 2 of this vocabulary
	all := make([]int, v.Size()+2) // a few ids outside the vocabulary too
	for i := range all {
		all[i] = i
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzMatcherRun(t, grs, v, all, data) })
}

// fuzzMatcherRun is one FuzzMatcher input: data[0] picks the grammar, every next
// byte an operation.
func fuzzMatcherRun(t *testing.T, grs []*engine.Grammar, v *listVocab, all []int, data []byte) {
	{
		if len(data) == 0 {
			return
		}
		m := grs[int(data[0])%len(grs)].NewMatcher()
		mask := make([]uint32, 3) // 96 ids for 38 tokens: padding must stay clear
		prev := make([]uint32, 3)
		for i := 1; i < len(data); i++ {
			op := data[i]
			maskErr := m.FillMask(mask)
			check(t, m, v, mask, maskErr, all)
			switch {
			case op < 200: // accept a token
				id := int(op) % (v.Size() + 2)
				copy(prev, mask)
				prevErr := maskErr
				allowed := bitSet(mask, id)
				h := m.History()
				err := m.AcceptToken(id)
				if maskErr == nil && (err == nil) != allowed {
					t.Fatalf("token %d: mask says %v, AcceptToken says %v", id, allowed, err)
				}
				if maskErr != nil && err != nil && !isLimit(err) {
					if _, ok := err.(*engine.RejectError); !ok {
						t.Fatalf("token %d: error of unknown type %T: %v", id, err, err)
					}
				}
				if err != nil {
					if m.History() != h {
						t.Fatalf("refused token changed the history")
					}
					if e := m.FillMask(mask); (e == nil) != (prevErr == nil) || !slices.Equal(mask, prev) {
						t.Fatalf("refused token %d changed the mask (%v, %v)", id, e, prevErr)
					}
				} else if i%3 == 0 {
					if err := m.Rollback(1); err != nil {
						t.Fatal(err)
					}
					if e := m.FillMask(mask); (e == nil) != (prevErr == nil) || !slices.Equal(mask, prev) {
						t.Fatalf("rollback after token %d did not restore the mask (%v, %v)", id, e, prevErr)
					}
					_ = m.AcceptToken(id)
				}
			case op < 230: // raw bytes
				end := min(len(data), i+1+int(op-200)%4)
				if err := m.AcceptBytes(data[i+1 : end]); err != nil && !isLimit(err) {
					if _, ok := err.(*engine.RejectError); !ok {
						t.Fatalf("bytes: error of unknown type %T: %v", err, err)
					}
				}
				i = end - 1
			case op < 240:
				_ = m.Rollback(int(op-230) % 3)
			case op < 250:
				m = m.Clone()
			default:
				m.Reset()
			}
		}
	}
}

// check compares a mask with the per-token verdicts over ids (see
// stateDisagreements) and checks the padding.
func check(t *testing.T, m *engine.Matcher, v *listVocab, mask []uint32, maskErr error, ids []int) {
	t.Helper()
	if mask[1]>>(uint(v.Size())-32) != 0 || mask[2] != 0 {
		t.Fatalf("padding bits set: %x", mask)
	}
	if maskErr != nil && (mask[0] != 0 || mask[1] != 0) {
		t.Fatalf("mask error %v, but the mask is not cleared: %x", maskErr, mask)
	}
	if bad := stateDisagreements(m, v, mask, maskErr, ids, 3); len(bad) > 0 {
		t.Fatalf("%d disagreements, first: %v", len(bad), bad[:min(5, len(bad))])
	}
}
