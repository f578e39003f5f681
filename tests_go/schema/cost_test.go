package schema_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/schema"
	"github.com/tetherlm/tether/gocore/vocab"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// The cost of a schema is measured as a user pays it: schema text -> GBNF ->
// parsed grammar -> compiled for the real Llama-3 vocabulary -> first mask.

// llama3Vocab is the real Llama-3 vocabulary (128,256 tokens), its trie built.
func llama3Vocab(t testing.TB) *vocab.Vocab {
	t.Helper()
	v := testdata.Vocab(t, "llama3")
	require.NoError(t, engine.Prepare(v))
	return v
}

// schemaToFirstMask converts, parses and compiles a schema for v and fills the
// first mask; it returns the matcher (ready at the start) and the mask.
func schemaToFirstMask(t testing.TB, v *vocab.Vocab, schemaText []byte, opts ...schema.Option) (*engine.Matcher, []uint32) {
	t.Helper()
	pg, _, _, err := schema.Grammar(schemaText, opts...)
	require.NoError(t, err)
	gr, err := engine.Compile(pg, v)
	require.NoError(t, err)
	m := gr.NewMatcher()
	mask := make([]uint32, (v.Size()+31)/32)
	require.NoError(t, m.FillMask(mask))
	return m, mask
}

// cpuTime is the CPU time (user + system) the process has used: on a machine
// shared with other work, wall time per op says little, CPU time per op is what
// a compile costs.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU milliseconds per op since c0 (benchmarks).
func reportCPU(b *testing.B, c0 time.Duration) {
	b.ReportMetric(float64((cpuTime()-c0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// enumWords makes n distinct pseudo-random lowercase words (seeded).
func enumWords(n int) []string {
	r := rand.New(rand.NewSource(12))
	seen := map[string]bool{}
	out := make([]string, 0, n)
	for len(out) < n {
		b := make([]byte, 4+r.Intn(12))
		for i := range b {
			b[i] = byte('a' + r.Intn(26))
		}
		if w := string(b); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

func enumSchema(words []string) []byte {
	b, _ := json.Marshal(map[string]any{"enum": words})
	return b
}

// optionalPropsSchema: n optional integer properties p1..pn, nothing else allowed.
func optionalPropsSchema(n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"type":"object","additionalProperties":false,"properties":{`)
	for i := 1; i <= n; i++ {
		if i > 1 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"p%d":{"type":"integer"}`, i)
	}
	sb.WriteString(`}}`)
	return []byte(sb.String())
}

// acceptText feeds text to m token by token (the real tokenizer's pieces are
// not needed: the vocabulary has every byte) and reports whether it can end.
func acceptText(m *engine.Matcher, text string) bool {
	m.Reset()
	return m.AcceptBytes([]byte(text)) == nil && m.CanEnd()
}

// TestLargeEnumCost: an enum of 100,000 strings converts to a prefix-factored
// grammar that compiles and gives its first mask quickly (a flat alternation
// needed 100,000 stacks at the first character and failed with "raise
// WithMaxStacks"), and the matcher accepts exactly the members.
func TestLargeEnumCost(t *testing.T) {
	if testing.Short() {
		t.Skip("large grammar skipped in -short mode")
	}
	v := llama3Vocab(t)
	words := enumWords(100_000)
	start := time.Now()
	m, _ := schemaToFirstMask(t, v, enumSchema(words))
	took := time.Since(start)
	t.Logf("enum of %d strings: schema -> first mask %v (target 500 ms on an idle machine)", len(words), took)
	assert.Less(t, took, 10*time.Second, "compile cost must stay linear")
	for _, w := range []string{words[0], words[4711], words[len(words)-1]} {
		assert.True(t, acceptText(m, `"`+w+`"`), w)
		assert.False(t, acceptText(m, `"`+w+`x"`), w+"x")
		assert.False(t, acceptText(m, `"`+w[:len(w)-1]+`"`) && !contains(words, w[:len(w)-1]), w[:len(w)-1])
	}
	assert.False(t, acceptText(m, `"`+strings.Repeat("z", 17)+`"`))
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// BenchmarkEnum100k: schema text -> first mask for an enum of 100,000 strings
// with the Llama-3 vocabulary.
func BenchmarkEnum100k(b *testing.B) {
	v := llama3Vocab(b)
	s := enumSchema(enumWords(100_000))
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		schemaToFirstMask(b, v, s)
	}
	reportCPU(b, c0)
}

// TestManyOptionalProperties: 10,000 optional properties convert to a grammar
// that accepts any of them in order (a chain of 10,000 optional rules offered
// every property as its own stack after "{", beyond the engine's stack limit,
// so {"p1": 1} was refused at the first byte), and still refuses what the
// schema refuses.
func TestManyOptionalProperties(t *testing.T) {
	for _, n := range []int{40, 10_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			g, _, err := schema.FromJSONSchema(optionalPropsSchema(n))
			require.NoError(t, err)
			c := newChecker(t, g)
			last := fmt.Sprintf("p%d", n)
			for _, s := range []string{`{}`, `{"p1": 1}`, `{"p2":1,"p3":2}`, `{"p1":1,"p9":2,"p33":3,"` + last + `":4}`, `{"` + last + `":0}`, `{"p17":1,"p18":2,"p19":3}`} {
				assert.True(t, c.accepts(s), s)
			}
			for _, s := range []string{`{"p0":1}`, `{"p2":1,"p1":1}`, `{"p1":1,"p1":1}`, `{"p1":"x"}`, `{"p1":1,}`, `{,"p1":1}`, `{"q":1}`, `{"p33":1,"p9":2}`} {
				assert.False(t, c.accepts(s), s)
			}
		})
	}
	g, _, err := schema.FromJSONSchema([]byte(`{"type":"object","properties":{` + strings.TrimSuffix(strings.TrimPrefix(string(optionalPropsSchema(100)), `{"type":"object","additionalProperties":false,"properties":{`), `}}`) +
		`,"r":{"type":"string"}},"required":["p50","r"],"maxProperties":3}`))
	require.NoError(t, err)
	c := newChecker(t, g)
	for s, want := range map[string]bool{`{"p50":1,"r":"x"}`: true, `{"p1":1,"p50":1,"r":"x"}`: true, `{"p50":1,"p99":2,"r":"x"}`: true,
		`{"p1":1,"p50":1,"p99":2,"r":"x"}`: false, `{"p50":1}`: false, `{"p1":1,"r":"x"}`: false, `{"p50":1,"r":"x","z":1}`: true, `{"p50":1,"p51":1,"r":"x","z":1}`: false} {
		assert.Equal(t, want, c.accepts(s), s)
	}
}

// BenchmarkOptionalProperties10k: schema text -> first mask for an object of
// 10,000 optional properties with the Llama-3 vocabulary.
func BenchmarkOptionalProperties10k(b *testing.B) {
	benchSchemaAccepts(b, optionalPropsSchema(10_000), `{"p1": 1}`)
}

// benchSchemaAccepts times schema text -> first mask (Llama-3 vocabulary, prepared
// outside timing) and checks each compiled grammar accepts text.
func benchSchemaAccepts(b *testing.B, s []byte, text string) {
	v := llama3Vocab(b)
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		m, _ := schemaToFirstMask(b, v, s)
		if !acceptText(m, text) {
			b.Fatalf("%s refused", text)
		}
	}
	reportCPU(b, c0)
}

// BenchmarkMaxLength65535: schema text -> first mask for a string with
// maxLength 65535 (capped at DefaultLengthCap until counted repetitions are
// constant-size; WithLengthCap(0) lifts the cap).
func BenchmarkMaxLength65535(b *testing.B) {
	v := llama3Vocab(b)
	s := []byte(`{"type":"object","properties":{"text":{"type":"string","maxLength":65535}},"required":["text"]}`)
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		schemaToFirstMask(b, v, s)
	}
	reportCPU(b, c0)
}

// oneOfOptionalDiscriminators is a oneOf of n object branches whose "command" enums
// differ but are not required, each with a "parameters" object requiring its own
// properties (the shape of MaskBench's Github_medium o66069): exactly-one needs each
// branch merged with the negations of the others, and most of those combinations are
// unsatisfiable.
func oneOfOptionalDiscriminators(n int) []byte {
	var br []string
	for i := 0; i < n; i++ {
		var props, req []string
		for j := 0; j <= i%3+1; j++ {
			props = append(props, fmt.Sprintf(`"f%d":{"type":"string"}`, (i+j)%4))
			req = append(req, fmt.Sprintf(`"f%d"`, (i+j)%4))
		}
		br = append(br, fmt.Sprintf(`{"type":"object","properties":{"command":{"enum":["c%d"]},`+
			`"parameters":{"type":"object","properties":{%s},"required":[%s]}}}`, i, strings.Join(props, ","), strings.Join(req, ",")))
	}
	return []byte(`{"type":"object","oneOf":[` + strings.Join(br, ",") + `]}`)
}

// BenchmarkOneOfOptionalDiscriminators: schema -> first mask for five such branches;
// combinations whose merged prefix is already unsatisfiable are skipped.
func BenchmarkOneOfOptionalDiscriminators(b *testing.B) {
	benchSchemaAccepts(b, oneOfOptionalDiscriminators(5), `{"command": "c1"}`)
}

// BenchmarkLengthBoundedPattern: schema -> first mask for a pattern under a
// maxLength of 1,000: the automaton counts, a chain of ~2,000 states that
// minimization refines block by block (it took one round per state before).
func BenchmarkLengthBoundedPattern(b *testing.B) {
	benchSchemaAccepts(b, []byte(`{"type":"string","pattern":"^[a-z]+(-[a-z]+)*$","minLength":3,"maxLength":1000}`), `"abc-def"`)
}

// BenchmarkAnyOfLengthBoundedPatterns: an anyOf of eight patterns under the same
// length bounds (the shape of MaskBench's Handwritten allany22): one counting
// automaton per branch, whose equal states are one rule.
func BenchmarkAnyOfLengthBoundedPatterns(b *testing.B) {
	var br []string
	for i := 0; i < 8; i++ {
		br = append(br, fmt.Sprintf(`{"pattern":"%c.*%c"}`, 'a'+i, 'b'+i))
	}
	s := `{"type":"string","minLength":10,"maxLength":90,"anyOf":[` + strings.Join(br, ",") + `]}`
	benchSchemaAccepts(b, []byte(s), `"xxaxxxxbxx"`)
}

// BenchmarkKeyExclusionObjects: 300 objects that allow further properties, each
// with 20 names drawn from a pool of 200 (the shape of MaskBench's Kubernetes
// schemas): each needs the keys that are none of its names, a trie per set of
// names whose equal subtries are one rule.
func BenchmarkKeyExclusionObjects(b *testing.B) {
	r := rand.New(rand.NewSource(3))
	pool := enumWords(200)
	var objs []string
	for i := 0; i < 300; i++ {
		var ps []string
		for _, j := range r.Perm(len(pool))[:20] {
			ps = append(ps, fmt.Sprintf(`%q:{"type":"string"}`, pool[j]))
		}
		objs = append(objs, fmt.Sprintf(`"o%d":{"type":"object","properties":{%s}}`, i, strings.Join(ps, ",")))
	}
	s := `{"type":"object","properties":{` + strings.Join(objs, ",") + `}}`
	benchSchemaAccepts(b, []byte(s), `{"o1": {"zzz": 1}}`)
}
