package schema_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/schema"
)

// TestLoneSurrogateConstants: a const or enum value (or a property name) with a
// lone UTF-16 surrogate escape is a *SchemaError naming the keyword and the
// pointer, never a grammar for U+FFFD; surrogate pairs stay one character.
func TestLoneSurrogateConstants(t *testing.T) {
	cases := []struct {
		name, schema, keyword, pointer string
	}{
		{"const high surrogate", `{"const":"\ud800"}`, "const", ""},
		{"const low surrogate inside", `{"properties":{"a":{"const":"x\udfffy"}}}`, "const", "/properties/a"},
		{"enum with a lone surrogate in an object key", `{"enum":["a",{"k\udc00":1}]}`, "enum", ""},
		{"high surrogate followed by a non-surrogate escape", `{"enum":["\ud83d\u0041"]}`, "enum", ""},
		{"property name", `{"properties":{"\ud800":{"type":"integer"}}}`, "properties", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, opts := range [][]schema.Option{nil, {schema.Lenient()}} {
				g, _, err := schema.FromJSONSchema([]byte(tc.schema), opts...)
				var se *schema.SchemaError
				require.True(t, errors.As(err, &se), "want a *SchemaError, got %v with grammar\n%s", err, g)
				assert.Equal(t, tc.keyword, se.Keyword, se.Error())
				assert.Equal(t, tc.pointer, se.Pointer, se.Error())
				assert.Contains(t, se.Error(), "surrogate")
			}
		})
	}
	g, _, err := schema.FromJSONSchema([]byte(`{"enum":["\ud83d\ude00","\uFFFD"]}`))
	require.NoError(t, err)
	c := newChecker(t, g)
	assert.True(t, c.accepts("\"\U0001F600\""))
	assert.True(t, c.accepts("\"\uFFFD\""))
	assert.False(t, c.accepts("\"\uFFFD\uFFFD\""))
}

// TestUnsatisfiableRefs: a $ref to a definition that accepts nothing is either
// dropped where the schema allows (an optional property, an anyOf branch) or a
// *SchemaError naming the definition's pointer; the grammar never refers to a
// rule it does not define.
func TestUnsatisfiableRefs(t *testing.T) {
	ok := []struct {
		name, schema   string
		valid, invalid []string
	}{
		{"two optional properties refer to a definition that accepts nothing",
			`{"$defs":{"disallowed":{"not":{}}},"properties":{"a":{"$ref":"#/$defs/disallowed"},"b":{"$ref":"#/$defs/disallowed"}}}`,
			[]string{`{}`, `{"c":1}`}, []string{`{"a":1}`, `{"b":null}`}},
		{"anyOf branches refer to it twice",
			`{"$defs":{"no":{"type":"integer","enum":["x"]}},"anyOf":[{"$ref":"#/$defs/no"},{"type":"array","items":{"$ref":"#/$defs/no"}},{"type":"string"}]}`,
			[]string{`"s"`, `[]`}, []string{`1`, `[1]`}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			g, _, err := schema.FromJSONSchema([]byte(tc.schema))
			require.NoError(t, err)
			c := newChecker(t, g)
			for _, s := range tc.valid {
				assert.True(t, c.accepts(s), "valid %q rejected by\n%s", s, g)
			}
			for _, s := range tc.invalid {
				assert.False(t, c.accepts(s), "invalid %q accepted by\n%s", s, g)
			}
		})
	}
	bad := []struct {
		name, schema, keyword, pointer string
	}{
		{"required property refers to it", `{"$defs":{"disallowed":{"not":{}}},"properties":{"a":{"$ref":"#/$defs/disallowed"}},"required":["a"]}`, "not", "/$defs/disallowed"},
		{"a definition that must contain itself", `{"$defs":{"d":{"type":"array","items":{"$ref":"#/$defs/d"},"minItems":1}},"properties":{"x":{"$ref":"#/$defs/d"}}}`, "$ref", "/$defs/d"},
		{"a required self-reference through an object", `{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}},"required":["next"]}},"$ref":"#/$defs/n"}`, "$ref", "/$defs/n"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			g, _, err := schema.FromJSONSchema([]byte(tc.schema))
			var se *schema.SchemaError
			require.True(t, errors.As(err, &se), "want a *SchemaError, got %v with grammar\n%s", err, g)
			assert.Equal(t, tc.keyword, se.Keyword, se.Error())
			assert.Equal(t, tc.pointer, se.Pointer, se.Error())
		})
	}
}
