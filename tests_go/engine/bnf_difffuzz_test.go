package engine_test

import (
	"fmt"
	"math/rand"
	"strings"
)

// diffBNFGrammar writes a random grammar in bnf_sampler's dialect for the
// differential fuzz target: terminals, <any!>, <except!('lit')> and
// <except!([rule])>, and references to any rule in any place, so that direct and
// indirect left recursion (through rules that can be empty too) are common. Those
// the parser refuses (a cycle with no way out) are skipped by the target.
func diffBNFGrammar(r *rand.Rand) string {
	lits := []string{"a", "b", "ab", "abc", "the", " ", `\n`, "é", "日本", "{", "}", ",", `\"`, "1", "12", "x", "in", " t"}
	excepts := []string{"a", "ar", " ", "e", `\"`, "in", "1"}
	n := 1 + r.Intn(4)
	item := func() string {
		switch x := r.Intn(10); {
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
