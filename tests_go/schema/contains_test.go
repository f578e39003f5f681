package schema_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tetherlm/tether/gocore/schema"
)

// TestContainsCounts compares contains/minContains/maxContains with
// minItems/maxItems and prefixItems against their definition on every array
// of up to 5 items over a small alphabet.
func TestContainsCounts(t *testing.T) {
	alphabet := []string{"0", "1", "2", `"a"`}
	type limits struct{ minC, maxC, minI, maxI int } // -1: absent
	var cases []limits
	for _, minC := range []int{-1, 0, 1, 2} {
		for _, maxC := range []int{-1, 0, 1, 2} {
			for _, minI := range []int{-1, 2} {
				for _, maxI := range []int{-1, 3} {
					cases = append(cases, limits{minC, maxC, minI, maxI})
				}
			}
		}
	}
	for _, withPrefix := range []bool{false, true} {
		for _, l := range cases {
			s := map[string]any{"type": "array", "items": map[string]any{"type": "integer"}, "contains": map[string]any{"const": 1}}
			if withPrefix {
				s["prefixItems"] = []any{map[string]any{"type": "string"}}
			}
			for k, v := range map[string]int{"minContains": l.minC, "maxContains": l.maxC, "minItems": l.minI, "maxItems": l.maxI} {
				if v >= 0 {
					s[k] = v
				}
			}
			text := mustJSON(s)
			g, _, err := schema.FromJSONSchema([]byte(text))
			valid := func(items []string) bool {
				n := 0
				for i, x := range items {
					if withPrefix && i == 0 {
						if x != `"a"` {
							return false
						}
					} else if x == `"a"` {
						return false
					}
					if x == "1" {
						n++
					}
				}
				minC := max(l.minC, 0)
				if l.minC < 0 {
					minC = 1
				}
				return n >= minC && (l.maxC < 0 || n <= l.maxC) && len(items) >= max(l.minI, 0) && (l.maxI < 0 || len(items) <= l.maxI)
			}
			if err != nil {
				// only an unsatisfiable combination may be refused
				assert.Regexp(t, "no array|less than minContains", err.Error(), text)
				forEachArray(alphabet, 5, func(items []string) {
					assert.False(t, valid(items), "%s refused but %v is valid", text, items)
				})
				continue
			}
			c := newChecker(t, g)
			forEachArray(alphabet, 5, func(items []string) {
				arr := "[" + strings.Join(items, ",") + "]"
				assert.Equal(t, valid(items), c.accepts(arr), "%s on %s", text, arr)
			})
		}
	}
}

func forEachArray(alphabet []string, maxLen int, f func([]string)) {
	var rec func(prefix []string)
	rec = func(prefix []string) {
		f(prefix)
		if len(prefix) == maxLen {
			return
		}
		for _, a := range alphabet {
			rec(append(prefix[:len(prefix):len(prefix)], a))
		}
	}
	rec(nil)
}

// TestContainsSchemas: contains with other item schemas and negations.
func TestContainsSchemas(t *testing.T) {
	cases := []schemaCase{
		{`{"contains":{"minimum":5},"items":{"type":"integer"}}`, []string{`[1,5]`, `[7]`, `[ 1 , 9 ]`}, []string{`[]`, `[1,2]`, `["a",5]`}},
		{`{"contains":{"type":"string"},"maxContains":1}`, []string{`["a"]`, `[1,"b",null]`}, []string{`["a","b"]`, `[]`, `[1]`}},
		{`{"contains":{"const":true},"maxContains":1,"minContains":1}`, []string{`[true,false]`, `[false,true,1]`}, []string{`[true,true]`, `[false]`}},
		{`{"contains":{"enum":[2,"x",null]},"maxContains":1}`, []string{`[2,3]`, `["x","y"]`, `[null]`}, []string{`[2,"x"]`, `[]`, `[null,null]`}},
		{`{"contains":true}`, []string{`[1]`, `[[]]`}, []string{`[]`}},
		{`{"contains":{"type":"integer"},"minContains":0}`, []string{`[]`, `["a"]`}, nil},
	}
	checkSchemaCases(t, cases)
	_, _, err := schema.FromJSONSchema([]byte(`{"contains":false}`))
	assert.ErrorContains(t, err, `"contains"`)
	_, _, err = schema.FromJSONSchema([]byte(`{"contains":{"pattern":"a"},"maxContains":2}`))
	assert.NoError(t, err, "not pattern is exact")
	_, _, err = schema.FromJSONSchema([]byte(`{"contains":{"type":"object","patternProperties":{"^a":{"type":"string"}}},"maxContains":2}`))
	assert.ErrorContains(t, err, "maxContains", "patternProperties beside other keywords has no exact negation here")
}
