package gbnf_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// checkInvariants checks what the engine relies on in every parsed grammar.
// It uses plain comparisons per element: the fuzz target runs it on grammars
// of thousands of elements.
func checkInvariants(t testing.TB, g *gbnf.Grammar) {
	t.Helper()
	require.NotNil(t, g)
	require.NotEmpty(t, g.Rules)
	require.True(t, g.Root >= 0 && g.Root < len(g.Rules), "root %d out of range", g.Root)
	require.Len(t, g.Index, len(g.Rules), "every rule is in Index")
	for i, r := range g.Rules {
		if j, ok := g.Index[r.Name]; !ok || j != i {
			t.Fatalf("Index[%q] = %d, %v; want %d", r.Name, j, ok, i)
		}
		if len(r.Alts) == 0 {
			t.Fatalf("rule %q has no alternatives", r.Name)
		}
		if r.Pos.Line < 1 || r.Pos.Col < 1 {
			t.Fatalf("rule %q has no position: %v", r.Name, r.Pos)
		}
		for _, alt := range r.Alts {
			for _, e := range alt {
				switch e.Kind {
				case gbnf.Char:
					if !e.Negated && len(e.Ranges) == 0 {
						t.Fatalf("a Char in %q matches nothing", r.Name)
					}
					for k, rg := range e.Ranges {
						if rg.Lo > rg.Hi || k > 0 && rg.Lo <= e.Ranges[k-1].Hi+1 {
							t.Fatalf("ranges in %q are not sorted and merged: %v", r.Name, e.Ranges)
						}
					}
				case gbnf.RuleRef:
					if e.Rule < 0 || int(e.Rule) >= len(g.Rules) {
						t.Fatalf("reference in %q to rule %d, out of range", r.Name, e.Rule)
					}
				case gbnf.Repeat:
					if e.Rule < 0 || int(e.Rule) >= len(g.Rules) || e.Min < 0 || e.Max < 1 || e.Min > e.Max {
						t.Fatalf("repetition in %q: rule %d {%d,%d}", r.Name, e.Rule, e.Min, e.Max)
					}
				case gbnf.Token:
					if e.Name != "" && e.Token != -1 || e.Name == "" && e.Token < 0 {
						t.Fatalf("token in %q: id %d, name %q", r.Name, e.Token, e.Name)
					}
				default:
					t.Fatalf("unknown element kind %d in %q", e.Kind, r.Name)
				}
			}
		}
	}
}

// checkRoundTrip checks that Format writes text that parses to the same grammar.
func checkRoundTrip(t testing.TB, g *gbnf.Grammar) {
	t.Helper()
	text := gbnf.Format(g)
	g2, err := gbnf.Parse(text, gbnf.WithRoot(g.Rules[g.Root].Name), gbnf.WithMaxElements(1<<30))
	require.NoError(t, err, "Format output:\n%s", text)
	require.Equal(t, g.Root, g2.Root)
	require.Equal(t, g.Index, g2.Index)
	require.Len(t, g2.Rules, len(g.Rules))
	for i := range g.Rules {
		if g.Rules[i].Name != g2.Rules[i].Name || !reflect.DeepEqual(g.Rules[i].Alts, g2.Rules[i].Alts) {
			require.Equal(t, g.Rules[i].Alts, g2.Rules[i].Alts, "rule %q after a round trip through\n%s", g.Rules[i].Name, text)
			require.Equal(t, g.Rules[i].Name, g2.Rules[i].Name)
		}
	}
}
