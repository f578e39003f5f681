package schema_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

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

// TestPatternPropertiesPerPattern: keys decide their value's schema by the
// patterns they match (all of them where patterns overlap), keys matching no
// pattern take additionalProperties, a false pattern forbids its keys, and a
// named property matching a pattern satisfies both schemas.
func TestPatternPropertiesPerPattern(t *testing.T) {
	cases := []struct {
		name, schema   string
		valid, invalid []string
	}{
		{"differently typed disjoint patterns",
			`{"type":"object","patternProperties":{"^a":{"type":"integer"},"^b":{"type":"string"}},"additionalProperties":false}`,
			[]string{`{}`, `{"a1":1,"b":"x"}`, `{"b":"x","a":2}`, `{"abc":-3}`},
			[]string{`{"a":"x"}`, `{"b":1}`, `{"c":1}`}},
		{"other keys take additionalProperties (default: any value)",
			`{"type":"object","patternProperties":{"^a":{"type":"integer"},"^b":{"type":"string"}}}`,
			[]string{`{"c":[]}`, `{"ab":1,"ba":"s","x":null}`, `{"":true}`},
			[]string{`{"a":"x"}`, `{"ba":2}`}},
		{"false forbids the keys it matches",
			`{"type":"object","patternProperties":{"x$":false}}`,
			[]string{`{"a":1}`, `{"xa":{}}`, `{}`},
			[]string{`{"ax":1}`, `{"x":null}`, `{"a":1,"bx":2}`}},
		{"false beside properties and additionalProperties",
			`{"type":"object","properties":{"id":{"type":"integer"}},"patternProperties":{"^_":false},"additionalProperties":{"type":"string"}}`,
			[]string{`{"id":1,"n":"x"}`, `{"n":"x"}`},
			[]string{`{"_n":"x"}`, `{"n":1}`, `{"id":"x"}`}},
		{"overlapping patterns: both schemas, named property too",
			`{"type":"object","properties":{"ax":{"type":"string"}},"patternProperties":{"x$":{"minLength":2},"^a":{"maxLength":3}},"additionalProperties":false}`,
			[]string{`{"ax":"ss"}`, `{"bx":"ss"}`, `{"ay":"sss"}`, `{"aax":"sss"}`, `{"ax":"sss","aax":"ss"}`},
			[]string{`{"ax":"s"}`, `{"ax":"ssss"}`, `{"bx":"s"}`, `{"ay":"ssss"}`, `{"ay":1}`, `{"y":1}`, `{"ax":"ss","ax":"ss"}`, `{"aax":"ssss"}`, `{"aax":"s"}`}},
		{"anchored prefix pattern: other keys take any value, matching keys the pattern's",
			`{"type":"object","patternProperties":{"^iglu:":{"type":"integer"}}}`,
			[]string{`{"iglu:x":1}`, `{"iglu":"s"}`, `{"xiglu:":"s"}`},
			[]string{`{"iglu:x":"s"}`, `{"iglu:":[]}`}},
		{"patterns with JSON escapes in keys",
			`{"type":"object","patternProperties":{"^\"":{"type":"integer"},"^[^\"]":{"type":"boolean"}},"additionalProperties":false}`,
			[]string{`{"\"q":1}`, `{"a\"":true}`},
			[]string{`{"\"q":true}`, `{"a":1}`, `{"":1}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, ign, err := schema.FromJSONSchema([]byte(tc.schema))
			require.NoError(t, err)
			require.Empty(t, ign)
			c := newChecker(t, g)
			for _, s := range tc.valid {
				assert.True(t, c.accepts(s), "valid %q rejected by\n%s", s, g)
			}
			for _, s := range tc.invalid {
				assert.False(t, c.accepts(s), "invalid %q accepted by\n%s", s, g)
			}
		})
	}
}

// TestFalseProperties: a property whose schema is false may not appear (and
// may not be required).
func TestFalseProperties(t *testing.T) {
	g, _, err := schema.FromJSONSchema([]byte(`{"type":"object","properties":{"a":false,"b":{"type":"integer"}}}`))
	require.NoError(t, err)
	c := newChecker(t, g)
	for s, want := range map[string]bool{`{}`: true, `{"b":1}`: true, `{"c":1}`: true, `{"a":1}`: false, `{"b":1,"a":1}`: false} {
		assert.Equal(t, want, c.accepts(s), s)
	}
	_, _, err = schema.FromJSONSchema([]byte(`{"type":"object","properties":{"a":false},"required":["a"]}`))
	var se *schema.SchemaError
	require.True(t, errors.As(err, &se), "%v", err)
}

// TestPatternWithLengthLimits: minLength/maxLength are intersected with the
// pattern's automaton (code points of the decoded string), whatever the shape
// of the pattern.
func TestPatternWithLengthLimits(t *testing.T) {
	cases := []struct {
		name, schema   string
		valid, invalid []string
	}{
		{"slug with a bound", `{"type":"string","pattern":"^[a-z]+(-[a-z]+)*$","maxLength":6}`,
			[]string{`"ab-cd"`, `"abcdef"`, `"a-b-c"`}, []string{`"abcdefg"`, `"ab-"`, `"a-b-c-d"`, `""`}},
		{"unanchored pattern and both bounds", `{"type":"string","pattern":"x","minLength":2,"maxLength":3}`,
			[]string{`"ax"`, `"xab"`, `"\n\nx"`, `"é€x"`}, []string{`"x"`, `"abcx"`, `"abc"`}},
		{"alternation", `{"type":"string","pattern":"^(ab|c[0-9]+)$","minLength":3,"maxLength":4}`,
			[]string{`"c12"`, `"c123"`}, []string{`"ab"`, `"c1"`, `"c1234"`}},
		{"email-like", `{"type":"string","pattern":"^[^@]+@[^@]+\\.[a-z]{2,}$","maxLength":8}`,
			[]string{`"a@b.cd"`, `"ab@c.de"`}, []string{`"abc@d.efg"`, `"a@b.c"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, ign, err := schema.FromJSONSchema([]byte(tc.schema))
			require.NoError(t, err)
			require.Empty(t, ign)
			c := newChecker(t, g)
			for _, s := range tc.valid {
				assert.True(t, c.accepts(s), "valid %q rejected by\n%s", s, g)
			}
			for _, s := range tc.invalid {
				assert.False(t, c.accepts(s), "invalid %q accepted by\n%s", s, g)
			}
		})
	}
	_, _, err := schema.FromJSONSchema([]byte(`{"type":"string","pattern":"^a+b$","maxLength":1}`))
	var se *schema.SchemaError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, "maxLength", se.Keyword)
}

// TestLengthCap: a plain string's length bounds are one counted repetition, so
// maxLength is never capped (65,535 is exact) and only a minLength above the
// grammar's largest required count is an error; where a length bound is
// intersected with a pattern's automaton, a maxLength above the cap is lowered
// to it and listed (Narrowed) in every mode, never silently.
func TestLengthCap(t *testing.T) {
	assert.Equal(t, 5000, schema.DefaultLengthCap)
	g, ign, err := schema.FromJSONSchema([]byte(`{"type":"object","properties":{"s":{"type":"string","maxLength":65535}}}`))
	require.NoError(t, err)
	assert.Empty(t, ign)
	assert.Contains(t, g, "{0,65535}")
	c := newChecker(t, g)
	assert.True(t, c.accepts(`{"s":"`+strings.Repeat("x", 65535)+`"}`))
	assert.False(t, c.accepts(`{"s":"`+strings.Repeat("x", 65536)+`"}`))

	g, ign, err = schema.FromJSONSchema([]byte(`{"type":"string","maxLength":20}`), schema.WithLengthCap(10))
	require.NoError(t, err)
	assert.Empty(t, ign, "no cap on a plain string")
	assert.Contains(t, g, "{0,20}")

	_, ign, err = schema.FromJSONSchema([]byte(`{"type":"string","pattern":"^[a-z]+(-[a-z]+)*$","maxLength":20}`), schema.WithLengthCap(10))
	require.NoError(t, err)
	require.Len(t, ign, 1)
	assert.Equal(t, "maxLength", ign[0].Keyword)
	assert.True(t, ign[0].Narrowed)
	assert.Contains(t, ign[0].String(), "narrowed")

	_, _, err = schema.FromJSONSchema([]byte(`{"type":"string","minLength":2001}`))
	var se *schema.SchemaError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, "minLength", se.Keyword)
	_, _, err = schema.FromJSONSchema([]byte(`{"type":"string","minLength":2000}`))
	require.NoError(t, err)
}

// TestPatternAutomataAgainstRegexp: for patterns of many shapes, with and
// without length limits, and as patternProperties keys, the grammar's verdict
// on random strings is Go's regexp verdict (these patterns mean the same in
// ECMA-262 and Go) and the length check.
func TestPatternAutomataAgainstRegexp(t *testing.T) {
	patterns := []string{`^[a-z]+(-[a-z]+)*$`, `x`, `^(ab|c[0-9]+)$`, `^a`, `b$`, `^$`, `a|^b|c$`, `^(a|b)*c(a|b)?$`,
		`[0-9]{2}`, `^[^a]*a[^a]*$`, `^(?:ab)+$`, `"`, `^\\`, `(a+)+b`, `^\d{1,3}(\.\d{1,3}){0,2}$`}
	alphabet := []rune{'a', 'b', 'c', 'x', '-', '0', '1', '.', '"', '\\', '\n', 'é'}
	r := rand.New(rand.NewSource(7))
	randString := func() string {
		n := r.Intn(8)
		rs := make([]rune, n)
		for i := range rs {
			rs[i] = alphabet[r.Intn(len(alphabet))]
		}
		return string(rs)
	}
	for _, p := range patterns {
		re := regexp.MustCompile(p)
		for _, lim := range [][2]int{{0, -1}, {1, 3}, {2, 5}, {0, 4}} {
			text := withLengths(map[string]any{"type": "string", "pattern": p}, lim)
			g, _, err := schema.FromJSONSchema(text)
			var se *schema.SchemaError
			if errors.As(err, &se) && se.Keyword == "maxLength" {
				continue // no string satisfies both
			}
			require.NoError(t, err, string(text))
			c := newChecker(t, g)
			for i := 0; i < 300; i++ {
				s := randString()
				n := utf8.RuneCountInString(s)
				want := re.MatchString(s) && n >= lim[0] && (lim[1] < 0 || n <= lim[1])
				q, _ := json.Marshal(s)
				require.Equal(t, want, c.accepts(string(q)), "%s: %s\n%s", text, q, g)
			}
		}
		// as the only pattern of an object: matching keys take integers, others strings
		text := fmt.Sprintf(`{"type":"object","patternProperties":{%s:{"type":"integer"}},"additionalProperties":{"type":"string"}}`, mustJSON(p))
		g, _, err := schema.FromJSONSchema([]byte(text))
		require.NoError(t, err, text)
		c := newChecker(t, g)
		for i := 0; i < 200; i++ {
			k := randString()
			q := mustJSON(k)
			asInt, asStr := `{`+q+`:1}`, `{`+q+`:"s"}`
			m := re.MatchString(k)
			require.Equal(t, m, c.accepts(asInt), "%s: %s\n%s", text, asInt, g)
			require.Equal(t, !m, c.accepts(asStr), "%s: %s\n%s", text, asStr, g)
		}
	}
}

// withLengths returns the JSON text of sch with lim's bounds: minLength lim[0]
// (when above 0) and maxLength lim[1] (when not -1).
func withLengths(sch map[string]any, lim [2]int) []byte {
	if lim[0] > 0 {
		sch["minLength"] = lim[0]
	}
	if lim[1] >= 0 {
		sch["maxLength"] = lim[1]
	}
	text, _ := json.Marshal(sch)
	return text
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestUnknownFormatsAreAnnotations: a format JSON Schema does not define is
// unknown vocabulary, which validators ignore: it constrains nothing (and is
// not listed); defined formats the converter cannot write are still refused.
func TestUnknownFormatsAreAnnotations(t *testing.T) {
	g, ign, err := schema.FromJSONSchema([]byte(`{"type":"object","properties":{"v":{"type":"string","format":"semver"},"n":{"type":"integer","format":"int32"}},"required":["v"]}`))
	require.NoError(t, err)
	assert.Empty(t, ign)
	c := newChecker(t, g)
	assert.True(t, c.accepts(`{"v":"anything at all"}`))
	assert.False(t, c.accepts(`{"v":1}`))
	assert.False(t, c.accepts(`{"v":"x","n":2147483648}`), "numeric formats still bound integers")
	_, _, err = schema.FromJSONSchema([]byte(`{"type":"string","format":"color"}`))
	var se *schema.SchemaError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, "format", se.Keyword)
}

// TestNotRewrites: the forms of "not" that have an exact positive equivalent.
func TestNotRewrites(t *testing.T) {
	cases := []struct {
		name, schema   string
		valid, invalid []string
	}{
		{"double negation", `{"not":{"not":{"type":"integer","minimum":3}}}`,
			[]string{`3`, `10`}, []string{`2`, `"x"`, `3.5`}},
		{"not required: an object without the property", `{"properties":{"a":{"type":"integer"}},"not":{"required":["a"]}}`,
			[]string{`{}`, `{"b":1}`}, []string{`{"a":1}`, `"x"`, `1`}},
		{"not required of two: not both", `{"type":"object","properties":{"a":{},"b":{}},"additionalProperties":false,"not":{"required":["a","b"]}}`,
			[]string{`{}`, `{"a":1}`, `{"b":2}`}, []string{`{"a":1,"b":2}`}},
		{"not anyOf of requireds: neither", `{"type":"object","properties":{"a":{},"b":{},"c":{}},"additionalProperties":false,"not":{"anyOf":[{"required":["a"]},{"required":["b"]}]}}`,
			[]string{`{}`, `{"c":1}`}, []string{`{"a":1}`, `{"b":1}`, `{"a":1,"c":1}`}},
		{"not allOf of a type and nothing", `{"not":{"allOf":[{"type":"string"},{}]}}`,
			[]string{`1`, `null`, `[]`}, []string{`"x"`}},
		{"bounds flip", `{"type":["string","number","array"],"not":{"anyOf":[{"type":"string","maxLength":2},{"type":"number","minimum":5},{"type":"array","maxItems":0}]}}`,
			[]string{`"abc"`, `4`, `4.5`, `[1]`}, []string{`"ab"`, `5`, `7`, `[]`, `null`}},
		{"overlapping oneOf of required properties: exactly one", `{"type":"object","properties":{"a":{},"b":{}},"oneOf":[{"required":["a"]},{"required":["b"]}]}`,
			[]string{`{"a":1}`, `{"b":1}`, `{"a":1,"c":2}`}, []string{`{}`, `{"a":1,"b":2}`}},
		{"overlapping oneOf of bounds", `{"type":"integer","oneOf":[{"maximum":2},{"maximum":5}]}`,
			[]string{`3`, `5`}, []string{`2`, `0`, `6`}},
		{"overlapping oneOf through $ref and properties", `{"$defs":{"s":{"properties":{"k":{"type":"string"}}}},"type":"object","oneOf":[{"$ref":"#/$defs/s"},{"properties":{"k":{"minLength":2}}}]}`,
			[]string{`{"k":"a"}`, `{"k":1}`}, []string{`{"k":"abc"}`, `{}`}},
		{"not pattern: a string that does not match", `{"type":["string","integer"],"not":{"pattern":"^x"}}`,
			[]string{`"ax"`, `""`}, []string{`"x"`, `"xy"`, `1`}},
		{"not enum of strings", `{"not":{"enum":["a","bc",null]}}`,
			[]string{`"b"`, `"abc"`, `""`, `1`, `true`, `{}`}, []string{`"a"`, `"bc"`, `null`}},
		{"two patterns in allOf, length and a negated constant", `{"allOf":[{"type":"string","pattern":"^[a-c]+$"},{"pattern":"b","maxLength":3},{"not":{"const":"abc"}}]}`,
			[]string{`"b"`, `"ab"`, `"cba"`}, []string{`"abc"`, `"aaa"`, `"abcb"`, `"xb"`}},
		{"if/then/else with a negatable condition", `{"type":"object","properties":{"kind":{"type":"string"},"n":{"type":"integer"}},"if":{"properties":{"kind":{"enum":["a"]}},"required":["kind"]},"then":{"required":["n"]},"else":{"properties":{"n":false}}}`,
			[]string{`{"kind":"a","n":1}`, `{"kind":"b"}`, `{}`}, []string{`{"kind":"a"}`, `{"kind":"b","n":1}`, `{"n":1}`}},
		{"in allOf", `{"allOf":[{"type":"object","properties":{"a":{},"b":{}}},{"not":{"required":["a"]}},{"not":{"required":["b"]}}]}`,
			[]string{`{}`, `{"c":1}`}, []string{`{"a":1}`, `{"b":1}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, ign, err := schema.FromJSONSchema([]byte(tc.schema))
			require.NoError(t, err)
			require.Empty(t, ign)
			c := newChecker(t, g)
			for _, s := range tc.valid {
				assert.True(t, c.accepts(s), "valid %q rejected by\n%s", s, g)
			}
			for _, s := range tc.invalid {
				assert.False(t, c.accepts(s), "invalid %q accepted by\n%s", s, g)
			}
		})
	}
}

// TestConstantsCheckedAgainstKeywords: enum/const objects and arrays are
// checked against the object and array keywords beside them, and keywords of
// one type do not drop constants of another.
func TestConstantsCheckedAgainstKeywords(t *testing.T) {
	cases := []struct {
		name, schema   string
		valid, invalid []string
	}{
		{"object constant and properties", `{"allOf":[{"enum":[{},{"foo":1},{"foo":"x"}]},{"properties":{"foo":{"type":"integer"}}}]}`,
			[]string{`{}`, `{"foo":1}`}, []string{`{"foo":"x"}`}},
		{"array constant and patternProperties", `{"enum":[[],{"fo":"x"},{"fo":2}],"patternProperties":{"f.*o":{"type":"integer"}}}`,
			[]string{`[]`, `{"fo":2}`}, []string{`{"fo":"x"}`}},
		{"array constants and items/minItems", `{"enum":[[1],[1,2],["a",2]],"items":{"type":"integer"},"minItems":2}`,
			[]string{`[1,2]`}, []string{`[1]`, `["a",2]`}},
		{"required and additionalProperties", `{"enum":[{"a":1},{"a":1,"b":2},{"b":2}],"required":["a"],"additionalProperties":false,"properties":{"a":{}}}`,
			[]string{`{"a":1}`}, []string{`{"a":1,"b":2}`, `{"b":2}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, ign, err := schema.FromJSONSchema([]byte(tc.schema))
			require.NoError(t, err)
			require.Empty(t, ign)
			c := newChecker(t, g)
			for _, s := range tc.valid {
				assert.True(t, c.accepts(s), "valid %q rejected by\n%s", s, g)
			}
			for _, s := range tc.invalid {
				assert.False(t, c.accepts(s), "invalid %q accepted by\n%s", s, g)
			}
		})
	}
}

// TestDependencies: dependentRequired and dependentSchemas (and draft-4
// dependencies) become "absent, or present with what it needs".
func TestDependencies(t *testing.T) {
	cases := []struct {
		name, schema   string
		valid, invalid []string
	}{
		{"dependentRequired", `{"type":"object","properties":{"a":{},"b":{},"c":{}},"additionalProperties":false,"dependentRequired":{"a":["b"]}}`,
			[]string{`{}`, `{"b":1}`, `{"a":1,"b":2}`, `{"c":1}`}, []string{`{"a":1}`, `{"a":1,"c":2}`}},
		{"draft-4 dependencies, both forms", `{"properties":{"a":{},"b":{},"c":{"type":"integer"}},"dependencies":{"a":["b"],"b":{"properties":{"c":{"minimum":5}}}}}`,
			[]string{`{}`, `{"a":1,"b":2}`, `{"b":1,"c":5}`, `{"c":1}`, `"x"`, `1`}, []string{`{"a":1}`, `{"b":1,"c":4}`, `{"a":1,"b":1,"c":1}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, ign, err := schema.FromJSONSchema([]byte(tc.schema))
			require.NoError(t, err)
			require.Empty(t, ign)
			c := newChecker(t, g)
			for _, s := range tc.valid {
				assert.True(t, c.accepts(s), "valid %q rejected by\n%s", s, g)
			}
			for _, s := range tc.invalid {
				assert.False(t, c.accepts(s), "invalid %q accepted by\n%s", s, g)
			}
		})
	}
}

// TestEnumTrie: the prefix-factored enum accepts exactly its members, also
// where one member is a prefix of another, and mixed with other kinds.
func TestEnumTrie(t *testing.T) {
	g, _, err := schema.FromJSONSchema([]byte(`{"enum":["a","ab","abc","b","","é","éa",1,10,1.5,true,null,[1],{"k":"a"}]}`))
	require.NoError(t, err)
	c := newChecker(t, g)
	for _, s := range []string{`"a"`, `"ab"`, `"abc"`, `"b"`, `""`, `"é"`, `"éa"`, `1`, `10`, `1.5`, `true`, `null`, `[1]`, `{"k":"a"}`} {
		assert.True(t, c.accepts(s), "%s rejected by\n%s", s, g)
	}
	for _, s := range []string{`"abcd"`, `"ac"`, `"ba"`, `"c"`, `"éb"`, `11`, `0`, `1.`, `false`, `[2]`, `"a`, `a"`} {
		assert.False(t, c.accepts(s), "%s accepted by\n%s", s, g)
	}
}

// TestPatternPropertiesRefusedNotSilent: where the key regions cannot be
// worked out (too many patterns) and the patterns' schemas differ, the
// conversion fails, or with Lenient lists patternProperties: never a grammar
// that silently allows only {}.
func TestPatternPropertiesRefusedNotSilent(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(`{"type":"object","patternProperties":{`)
	for i := 0; i < 9; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		typ := "integer"
		if i%2 == 1 {
			typ = "string"
		}
		fmt.Fprintf(&sb, `"^%c":{"type":%q}`, 'a'+i, typ)
	}
	sb.WriteString(`}}`)
	_, _, err := schema.FromJSONSchema([]byte(sb.String()))
	var se *schema.SchemaError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, "patternProperties", se.Keyword)
	_, ign, err := schema.FromJSONSchema([]byte(sb.String()), schema.Lenient())
	require.NoError(t, err)
	require.NotEmpty(t, ign)
	assert.Equal(t, "patternProperties", ign[0].Keyword)
}

// TestNoDeadEnds: a grammar part that can start but never finish (a pattern
// that matches nothing, under an optional property) is refused, so that no
// state of the grammar allows neither a byte nor the end.
func TestNoDeadEnds(t *testing.T) {
	for _, s := range []string{
		`{"type":"string","pattern":"^x[]$"}`,
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^x[]"}}}`,
	} {
		g, _, err := schema.FromJSONSchema([]byte(s))
		var se *schema.SchemaError
		require.True(t, errors.As(err, &se), "%s: want a *SchemaError, got %v\n%s", s, err, g)
	}
	g, _, err := schema.FromJSONSchema([]byte(`{"type":"string","pattern":"^(a|[])$"}`))
	require.NoError(t, err)
	c := newChecker(t, g)
	assert.True(t, c.accepts(`"a"`))
}

// TestAnyOfPatternsAgainstRegexp: an anyOf of patterns under one pair of length
// bounds becomes one automaton per branch, written from its last states back
// so that equal states share one rule within and across the branches' automata
// (and long bounds make long chains for minimization). On random strings of up
// to 45 characters the grammar's verdict is regexp's for some branch, and the
// length check.
func TestAnyOfPatternsAgainstRegexp(t *testing.T) {
	sets := [][]string{
		{`a`, `b`},
		{`^x`, `y$`, `xy`},
		{`^[ab]+$`, `^(ab)*c`, `b.*b`},
		{`[0-9]{2}`, `^[^a]*a[^a]*$`, `a|^b|c$`},
	}
	alphabet := []rune{'a', 'b', 'c', 'x', 'y', '0', '1', '"', 'é'}
	r := rand.New(rand.NewSource(11))
	randString := func() string {
		n := r.Intn(46)
		if r.Intn(2) == 0 {
			n = r.Intn(8)
		}
		rs := make([]rune, n)
		for i := range rs {
			rs[i] = alphabet[r.Intn(len(alphabet))]
		}
		return string(rs)
	}
	for _, set := range sets {
		var res []*regexp.Regexp
		var branches []any
		for _, p := range set {
			res = append(res, regexp.MustCompile(p))
			branches = append(branches, map[string]any{"pattern": p})
		}
		for _, lim := range [][2]int{{2, 6}, {0, 40}, {5, -1}, {3, 30}} {
			text := withLengths(map[string]any{"type": "string", "anyOf": branches}, lim)
			g, ign, err := schema.FromJSONSchema(text)
			require.NoError(t, err, string(text))
			require.Empty(t, ign)
			c := newChecker(t, g)
			for i := 0; i < 400; i++ {
				s := randString()
				n := utf8.RuneCountInString(s)
				match := false
				for _, re := range res {
					match = match || re.MatchString(s)
				}
				want := match && n >= lim[0] && (lim[1] < 0 || n <= lim[1])
				q, _ := json.Marshal(s)
				require.Equal(t, want, c.accepts(string(q)), "%s: %s", text, q)
			}
		}
	}
}

// TestKeyExclusionAcrossObjects: objects that allow further properties need
// every key that is none of their names; the tries of names are shared between
// objects where their continuations are equal. With overlapping name sets, a
// named key takes its own schema (integer) and any other key, a prefix or an
// extension of a name included, the additional one (string).
func TestKeyExclusionAcrossObjects(t *testing.T) {
	names := map[string][]string{
		"a": {"apiVersion", "kind", "metadata"},
		"b": {"apiVersion", "api", "kindred"},
		"c": {"kind", "kin", "k\u00e9", "k\"q"},
	}
	var props []string
	for obj, ns := range names {
		var ps []string
		for _, n := range ns {
			ps = append(ps, fmt.Sprintf(`%s:{"type":"integer"}`, mustJSON(n)))
		}
		props = append(props, fmt.Sprintf(`%q:{"type":"object","properties":{%s},"additionalProperties":{"type":"string"}}`, obj, strings.Join(ps, ",")))
	}
	text := `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`
	g, ign, err := schema.FromJSONSchema([]byte(text))
	require.NoError(t, err)
	require.Empty(t, ign)
	c := newChecker(t, g)
	pool := []string{"", "a", "api", "apiV", "apiVersion", "apiVersions", "kin", "kind", "kinde", "kindred", "k", "ké", "kë", "k\"q", "k\"", "metadata", "meta", "x"}
	r := rand.New(rand.NewSource(5))
	for obj, ns := range names {
		for i := 0; i < 120; i++ {
			k := pool[r.Intn(len(pool))]
			if r.Intn(4) == 0 {
				k += pool[r.Intn(len(pool))]
			}
			named := false
			for _, n := range ns {
				named = named || n == k
			}
			q := mustJSON(k)
			asInt := fmt.Sprintf(`{%q:{%s:1}}`, obj, q)
			asStr := fmt.Sprintf(`{%q:{%s:"s"}}`, obj, q)
			require.Equal(t, named, c.accepts(asInt), "%s", asInt)
			require.Equal(t, !named, c.accepts(asStr), "%s", asStr)
		}
	}
}

// TestJSONTextChecked: the schema's text is read by a scanner that checks it as
// it goes; whatever encoding/json refuses is reported as not JSON, and whatever
// it accepts converts (the text is a const's value here).
func TestJSONTextChecked(t *testing.T) {
	values := []string{
		`01`, `-`, `-01`, `1.`, `.5`, `1e`, `1e+`, `1E5`, `-0`, `0.5e-3`, `+1`, `0x10`, `1.5E+07`,
		`tru`, `true`, `nul`, `null`, `falsey`, `NaN`,
		"\"\x01\"", "\"a\tb\"", `"\x01"`, `"a\tb"`, `"\u12G4"`, `"\u12"`, `"\/"`, `"\q"`, `"\ud800"`, `"é"`, "\"\xff\"", `"abc`, `"\"`,
		`[1,]`, `[1 2]`, `[,1]`, `[]`, `[[[]]]`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{1:2}`, `{}`, `{"a":[{}]}`,
		`1 2`, "\ufeff1",
	}
	for _, v := range values {
		text := `{"const":` + v + `}`
		_, _, err := schema.FromJSONSchema([]byte(text))
		notJSON := err != nil && strings.Contains(err.Error(), "not valid JSON")
		assert.Equal(t, !json.Valid([]byte(text)), notJSON, "%s: %v", text, err)
	}
}

// One pattern with length limits at several places: the automaton is built once
// per (pattern, limits) and shared, and each place keeps its own limits.
func TestPatternLengthShared(t *testing.T) {
	const p = `"pattern":"^([a-z]+):([0-9]+)$"`
	s := `{"type":"object","properties":{` +
		`"a":{"type":"string",` + p + `,"maxLength":5},` +
		`"b":{"type":"string",` + p + `,"maxLength":5},` +
		`"c":{"type":"string",` + p + `,"maxLength":7},` +
		`"d":{"type":"string",` + p + `,"minLength":6}},` +
		`"required":["a","b","c","d"],"additionalProperties":false}`
	obj := func(a, b, c, d string) string {
		return `{"a":"` + a + `","b":"` + b + `","c":"` + c + `","d":"` + d + `"}`
	}
	checkSchemaCases(t, []schemaCase{{
		schema: s,
		accept: []string{
			obj("ab:12", "a:1", "abc:123", "abcd:1"),
			obj("a:123", "abc:1", "a:12345", "a:12345678"),
		},
		reject: []string{
			obj("ab:123", "a:1", "abc:123", "abcd:1"), // a too long
			obj("a:1", "ab:123", "abc:123", "abcd:1"), // b too long
			obj("a:1", "a:1", "abcd:1234", "abcd:1"),  // c too long
			obj("a:1", "a:1", "a:1", "ab:12"),         // d too short
			obj("a:1", "a:1", "a:1", "abcd:"),         // d off the pattern
			obj("a1", "a:1", "a:1", "abcd:1"),         // a off the pattern
		},
	}})
}

// TestPatternProductsAgainstRegexp: a string's patterns, the patterns it must
// not match and its length limits are one product automaton, whose states
// are found by number (few or many possible tuples) or by their bytes (more
// tuples than 64 bits count). For products of each kind the grammar's
// verdict on random strings is Go's regexp verdict and the length check.
func TestPatternProductsAgainstRegexp(t *testing.T) {
	// 15 patterns of about 40 states: more tuples than 2^64; after a 'z'
	// every one matches anything, so only the count ends the string
	var many []any
	var manyRe []*regexp.Regexp
	for i := 0; i < 15; i++ {
		p := fmt.Sprintf(`^([a-%c]{0,19}|z.*)$`, 'k'+rune(i%8))
		many = append(many, map[string]any{"pattern": p})
		manyRe = append(manyRe, regexp.MustCompile(p))
	}
	cases := []struct {
		name     string
		sch      map[string]any
		pos, neg []*regexp.Regexp
		min, max int
	}{
		{"few tuples", map[string]any{"type": "string", "pattern": "^[abz]*c", "not": map[string]any{"pattern": "a{3}"}, "minLength": 2, "maxLength": 12},
			[]*regexp.Regexp{regexp.MustCompile("^[abz]*c")}, []*regexp.Regexp{regexp.MustCompile("a{3}")}, 2, 12},
		{"over 65,536 tuples", map[string]any{"type": "string", "pattern": "^[a-z]{0,40}$", "not": map[string]any{"pattern": "^a{5,30}$"}, "maxLength": 100},
			[]*regexp.Regexp{regexp.MustCompile("^[a-z]{0,40}$")}, []*regexp.Regexp{regexp.MustCompile("^a{5,30}$")}, 0, 100},
		{"over 2^64 tuples", map[string]any{"type": "string", "allOf": many, "maxLength": 30}, manyRe, nil, 0, 30},
	}
	r := rand.New(rand.NewSource(11))
	alphabet := []rune{'a', 'a', 'a', 'b', 'c', 'k', 'r', 'z', 'é'}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text, err := json.Marshal(tc.sch)
			require.NoError(t, err)
			g, ign, err := schema.FromJSONSchema(text)
			require.NoError(t, err, string(text))
			require.Empty(t, ign)
			c := newChecker(t, g)
			accepted := 0
			for i := 0; i < 600; i++ {
				rs := make([]rune, r.Intn(45))
				for k := range rs {
					rs[k] = alphabet[r.Intn(len(alphabet))]
				}
				switch i % 3 {
				case 0: // runs of a's, the counted parts of the patterns
					rs = []rune(strings.Repeat("a", r.Intn(35)) + string(rs[:len(rs)%4]))
				case 1:
					rs = append([]rune{'z'}, rs...)
				}
				s := string(rs)
				want := len(rs) >= tc.min && len(rs) <= tc.max
				for _, re := range tc.pos {
					want = want && re.MatchString(s)
				}
				for _, re := range tc.neg {
					want = want && !re.MatchString(s)
				}
				if want {
					accepted++
				}
				require.Equal(t, want, c.accepts(mustJSON(s)), "%s: %q", text, s)
			}
			assert.Greater(t, accepted, 20, "too few accepted strings to judge")
		})
	}
}
