package schema_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/schema"
)

// TestUniqueItemsFiniteDomains compares uniqueItems over finite item domains
// with its definition on every array of up to 5 items.
func TestUniqueItemsFiniteDomains(t *testing.T) {
	alphabet := []string{"1", "2", "3", "true", "null", `"a"`}
	itemSchemas := map[string]func(string) bool{
		`{"enum":[1,2,3]}`:                           func(x string) bool { return x == "1" || x == "2" || x == "3" },
		`{"type":["boolean","null"]}`:                func(x string) bool { return x == "true" || x == "null" },
		`{"type":"integer","minimum":2,"maximum":3}`: func(x string) bool { return x == "2" || x == "3" },
	}
	for item, isItem := range itemSchemas {
		for _, minI := range []int{-1, 2} {
			for _, maxI := range []int{-1, 2, 4} {
				s := `{"type":"array","uniqueItems":true,"items":` + item
				if minI >= 0 {
					s += fmt.Sprintf(`,"minItems":%d`, minI)
				}
				if maxI >= 0 {
					s += fmt.Sprintf(`,"maxItems":%d`, maxI)
				}
				s += "}"
				g, ign, err := schema.FromJSONSchema([]byte(s))
				require.NoError(t, err, s)
				assert.Empty(t, ign, s)
				c := newChecker(t, g)
				forEachArray(alphabet, 5, func(xs []string) {
					valid := len(xs) >= max(minI, 0) && (maxI < 0 || len(xs) <= maxI)
					seen := map[string]bool{}
					for _, x := range xs {
						valid = valid && isItem(x) && !seen[x]
						seen[x] = true
					}
					arr := "[" + strings.Join(xs, ",") + "]"
					assert.Equal(t, valid, c.accepts(arr), "%s on %s", s, arr)
				})
			}
		}
	}
}

// TestUniqueItemsLargeDomainOrdered: above 10 possible values the items must
// come in the schema's order (a narrowing, listed as such); infinite domains
// are refused.
func TestUniqueItemsLargeDomainOrdered(t *testing.T) {
	var vals []string
	for i := 0; i < 20; i++ {
		vals = append(vals, fmt.Sprintf(`"v%d"`, i))
	}
	s := `{"type":"array","uniqueItems":true,"items":{"enum":[` + strings.Join(vals, ",") + `]}}`
	g, ign, err := schema.FromJSONSchema([]byte(s))
	require.NoError(t, err)
	require.Len(t, ign, 1)
	assert.True(t, ign[0].Narrowed)
	assert.Equal(t, "uniqueItems", ign[0].Keyword)
	c := newChecker(t, g)
	assert.True(t, c.accepts(`["v1","v3","v19"]`))
	assert.True(t, c.accepts(`[]`))
	assert.False(t, c.accepts(`["v3","v1"]`), "narrowed: out of the schema's order")
	assert.False(t, c.accepts(`["v1","v1"]`))

	_, _, err = schema.FromJSONSchema([]byte(`{"type":"array","uniqueItems":true,"items":{"type":"string"}}`))
	assert.ErrorContains(t, err, `"uniqueItems"`)
	g, ign, err = schema.FromJSONSchema([]byte(`{"type":"array","uniqueItems":true,"items":{"type":"string"}}`), schema.Lenient())
	require.NoError(t, err)
	require.Len(t, ign, 1)
	assert.False(t, ign[0].Narrowed)
	assert.True(t, newChecker(t, g).accepts(`["a","a"]`), "Lenient ignores it, and says so")
}

func enumOfN(n int) string {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprintf(`"v%d"`, i)
	}
	return "[" + strings.Join(vals, ",") + "]"
}

// TestUniqueItemsLargeEnums: a 10,000-value enum is too many items to write
// (refused, naming uniqueItems), unless the item's other keywords leave few
// of them (maxLength 2 leaves v0..v9: exact).
func TestUniqueItemsLargeEnums(t *testing.T) {
	_, _, err := schema.FromJSONSchema([]byte(`{"type":"array","uniqueItems":true,"items":{"enum":` + enumOfN(10000) + `}}`))
	assert.ErrorContains(t, err, `"uniqueItems"`)
	g, ign, err := schema.FromJSONSchema([]byte(`{"type":"array","uniqueItems":true,"items":{"enum":` + enumOfN(10000) + `,"maxLength":2}}`))
	require.NoError(t, err)
	assert.Empty(t, ign)
	c := newChecker(t, g)
	assert.True(t, c.accepts(`["v9","v0"]`))
	assert.False(t, c.accepts(`["v9","v9"]`))
	assert.False(t, c.accepts(`["v10"]`))
}

// BenchmarkUniqueItemsEnum10k: deciding a 10,000-value enum's items (quadratic
// before: ~6 s).
func BenchmarkUniqueItemsEnum10k(b *testing.B) {
	s := []byte(`{"type":"array","uniqueItems":true,"items":{"enum":` + enumOfN(10000) + `,"maxLength":2}}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := schema.FromJSONSchema(s); err != nil {
			b.Fatal(err)
		}
	}
}
