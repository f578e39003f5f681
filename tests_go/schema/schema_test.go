package schema_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/schema"
)

// TestSchemaInstances reads as a specification: each schema, the texts its
// grammar must accept and those it must refuse (default options: spec reading,
// flexible whitespace).
func TestSchemaInstances(t *testing.T) {
	cases := []struct {
		name    string
		schema  string
		opts    []schema.Option
		valid   []string
		invalid []string
	}{
		{"integer range across zero", `{"type":"integer","minimum":-12,"maximum":207}`,
			nil, []string{"-12", "-1", "0", "9", "10", "99", "100", "207"}, []string{"-13", "-0", "208", "300", "007", "1.5", ""}},
		{"exclusive bounds", `{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":100}`,
			nil, []string{"1", "99"}, []string{"0", "100"}},
		{"draft-4 boolean exclusiveMinimum", `{"type":"integer","minimum":5,"exclusiveMinimum":true}`,
			nil, []string{"6", "60"}, []string{"5", "4"}},
		{"number with integer bounds", `{"type":"number","minimum":0,"maximum":1}`,
			nil, []string{"0", "1", "0.5", "0.999", "1.0", "1.000", "0.0"}, []string{"-0.5", "1.5", "1.01", "2", "-1"}},
		{"number exclusive max", `{"type":"number","exclusiveMaximum":10}`,
			nil, []string{"9.99", "-100.5", "9"}, []string{"10", "10.0", "10.5"}},
		{"number multipleOf 0.01", `{"type":"number","multipleOf":0.01}`,
			nil, []string{"1.25", "3", "0.1", "2.50"}, []string{"1.255"}},
		{"unbounded number", `{"type":"number"}`,
			nil, []string{"-1.5e+3", "0", "12.25E-2"}, []string{"01", "1.", ".5", "+1"}},
		{"string length counts code points and escapes once", `{"type":"string","minLength":2,"maxLength":3}`,
			nil, []string{`"ab"`, `"\n\t"`, `"é€😀"`, `"\u00e9x"`, `"\ud83d\ude00x"`}, []string{`"a"`, `"abcd"`, `"\ud83d"`, "\"a\x01\""}},
		{"string escapes", `{"type":"string"}`,
			nil, []string{`"a\"b\\c\/d\u0041"`, `"tab\there"`}, []string{"\"raw\nnewline\"", `"bad\x"`, `"\u12"`}},
		{"pattern is unanchored", `{"type":"string","pattern":"ab+"}`,
			nil, []string{`"ab"`, `"xxabbby"`}, []string{`"a"`, `"ba"`}},
		{"anchored pattern with JSON escapes", `{"type":"string","pattern":"^[a\"\\\\]+$"}`,
			nil, []string{`"a\"\\"`}, []string{`"a\""x"`, `"b"`}},
		{"pattern dot excludes line terminators", `{"type":"string","pattern":"^.$"}`,
			nil, []string{`"x"`, `"é"`}, []string{`"\n"`, `"\r"`}},
		{"pattern \\s is ECMA's", `{"type":"string","pattern":"^\\s$"}`,
			nil, []string{`" "`, `"\t"`, "\"\u00a0\""}, []string{`"x"`}},
		{"pattern with length limits", `{"type":"string","pattern":"^[a-z]+$","maxLength":3}`,
			nil, []string{`"abc"`, `"a"`}, []string{`"abcd"`, `""`}},
		{"format date is exact", `{"type":"string","format":"date"}`,
			nil, []string{`"2024-02-29"`, `"2000-02-29"`, `"2023-12-31"`}, []string{`"2023-02-29"`, `"1900-02-29"`, `"2023-04-31"`, `"2023-13-01"`}},
		{"format date-time", `{"format":"date-time"}`,
			nil, []string{`"2012-04-23T18:25:43.511Z"`, `"2012-04-23T18:25:43+02:00"`}, []string{`"2012-04-23 18:25:43Z"`, `"2012-04-23T24:00:00Z"`}},
		{"format ipv4 and ipv6", `{"anyOf":[{"format":"ipv4"},{"format":"ipv6"}]}`,
			nil, []string{`"192.168.0.1"`, `"::1"`, `"2001:db8::8a2e:370:7334"`}, []string{`"256.1.1.1"`, `"01.1.1.1"`, `"1:2"`}},
		{"format uuid, email, uri", `{"type":"array","prefixItems":[{"format":"uuid"},{"format":"email"},{"format":"uri"}]}`,
			nil, []string{`["12345678-1234-1234-1234-1234567890ab","a.b@example.com","https://x.org/a?b#c"]`}, []string{`["x"]`, `["12345678-1234-1234-1234-1234567890ab","no-at"]`}},
		{"optional properties keep order, additional allowed after", `{"properties":{"a":{"type":"integer"},"b":{"type":"string"}}}`,
			nil, []string{`{}`, `{"b":"x"}`, `{"a":1,"b":"x"}`, `{"a":1,"c":null}`, `{"c":[1]}`, `{"a_":true}`}, []string{`{"a":"x"}`, `{"b":"x","a":1}`, `{"c":1,"a":"x"}`, `{"a":1,"a":2}`}},
		{"strict objects", `{"properties":{"a":{"type":"integer"}}}`,
			[]schema.Option{schema.StrictObjects()}, []string{`{}`, `{"a":1}`}, []string{`{"b":1}`}},
		{"required and additionalProperties schema", `{"properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":{"type":"string"}}`,
			nil, []string{`{"a":1}`, `{"a":1,"b":"x","c":"y"}`}, []string{`{}`, `{"a":1,"b":2}`, `{"b":"x"}`}},
		{"property whose schema accepts nothing cannot appear as additional", `{"properties":{"a":{"type":"object","enum":["x"]}}}`,
			nil, []string{`{}`, `{"b":1}`}, []string{`{"a":"x"}`, `{"a":{}}`}},
		{"min and max properties", `{"type":"object","additionalProperties":{"type":"integer"},"minProperties":1,"maxProperties":2}`,
			nil, []string{`{"a":1}`, `{"a":1,"b":2}`}, []string{`{}`, `{"a":1,"b":2,"c":3}`}},
		{"patternProperties", `{"type":"object","patternProperties":{"^x-":{"type":"integer"}},"additionalProperties":false}`,
			nil, []string{`{}`, `{"x-a":1,"x-b":2}`}, []string{`{"y":1}`, `{"x-a":"s"}`}},
		{"items, prefixItems and counts", `{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"},"minItems":2,"maxItems":3}`,
			nil, []string{`["a",1]`, `["a",1,2]`}, []string{`["a"]`, `["a",1,2,3]`, `[1,2]`, `["a","b"]`}},
		{"draft-4 tuple with additionalItems false", `{"items":[{"type":"integer"},{"type":"boolean"}],"additionalItems":false}`,
			nil, []string{`[]`, `[1]`, `[1,true]`}, []string{`[1,true,3]`, `[true]`}},
		{"enum and const", `{"enum":["a",1,null,[1,{"k":"v"}]]}`,
			nil, []string{`"a"`, `1`, `null`, `[1,{"k":"v"}]`, `[ 1 , { "k" : "v" } ]`}, []string{`"b"`, `2`, `[1]`}},
		{"allOf merges", `{"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},{"properties":{"a":{"minimum":5},"b":{"type":"string"}}}]}`,
			nil, []string{`{"a":5}`, `{"a":7,"b":"x"}`}, []string{`{"a":4}`, `{"b":"x"}`}},
		{"allOf with additionalProperties false on one side", `{"allOf":[{"properties":{"a":{}},"additionalProperties":false},{"properties":{"b":{}}}]}`,
			nil, []string{`{}`, `{"a":1}`}, []string{`{"b":1}`}},
		{"anyOf with siblings", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"anyOf":[{"required":["a"]},{"required":["b"]}],"additionalProperties":false}`,
			nil, []string{`{"a":1}`, `{"b":1}`, `{"a":1,"b":2}`}, []string{`{}`}},
		{"oneOf with a const discriminator", `{"oneOf":[{"properties":{"kind":{"const":"a"},"x":{"type":"integer"}},"required":["kind"]},{"properties":{"kind":{"const":"b"}},"required":["kind"]}]}`,
			nil, []string{`{"kind":"a","x":1}`, `{"kind":"b"}`}, []string{`{"kind":"c"}`, `{"kind":"a","x":"s"}`}},
		// exactly one branch, with no required discriminator: each branch merged with the
		// negations of the others, where most combinations are unsatisfiable (and skipped
		// as soon as a prefix is: the "p" that must be an object and not one)
		{"oneOf of objects whose discriminators are optional", `{"type":"object","oneOf":[` +
			`{"type":"object","properties":{"c":{"enum":["a"]},"p":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}}},` +
			`{"type":"object","properties":{"c":{"enum":["b"]},"p":{"type":"object","properties":{"y":{"type":"string"}},"required":["y"]}}},` +
			`{"type":"object","properties":{"c":{"enum":["d"]},"p":{"type":"object","properties":{"x":{"type":"boolean"}},"required":["x"]}}}]}`,
			nil, []string{`{"c":"a"}`, `{"c":"b","p":{"y":"s"}}`, `{"p":{"y":"s"}}`, `{"p":{"x":true}}`, `{"c":"d","p":{"x":false}}`, `{"p":{"x":"s"}}`},
			[]string{`{}`, `{"c":"e"}`, `{"p":{"x":"s","y":"t"}}`, `{"p":{}}`, `{"c":"a","p":{"y":"s"}}`, `{"p":1}`}},
		{"recursive $ref with ~1 escape", `{"$defs":{"a/b":{"type":"object","properties":{"next":{"$ref":"#/$defs/a~1b"}},"additionalProperties":false}},"$ref":"#/$defs/a~1b"}`,
			nil, []string{`{}`, `{"next":{"next":{}}}`}, []string{`{"next":1}`}},
		{"nullable", `{"type":"string","nullable":true}`,
			nil, []string{`"x"`, `null`}, []string{`1`}},
		{"type list", `{"type":["integer","boolean"]}`,
			nil, []string{`1`, `true`}, []string{`1.5`, `null`}},
		{"boolean schema true", `true`, nil, []string{`1`, `{"a":[null]}`}, []string{`{`}},
		{"compact whitespace", `{"type":"array","items":{"type":"integer"}}`,
			[]schema.Option{schema.WithWhitespace(schema.Compact)}, []string{`[1,2]`}, []string{`[1, 2]`}},
		{"bounded whitespace", `{"type":"array","items":{"type":"integer"}}`,
			[]schema.Option{schema.WithWhitespace(schema.Bounded)}, []string{"[1, 2]", "[\n  1,\n  2\n]"}, []string{"[1,   2]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, ign, err := schema.FromJSONSchema([]byte(tc.schema), tc.opts...)
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

// TestSchemaErrors: keywords that cannot be enforced are refused with the
// keyword and its JSON pointer, and Lenient lists them instead.
func TestSchemaErrors(t *testing.T) {
	cases := []struct {
		name, schema, keyword, pointer string
		lenientOK                      bool
	}{
		{"uniqueItems", `{"properties":{"tags":{"type":"array","uniqueItems":true}}}`, "uniqueItems", "/properties/tags", true},
		{"not", `{"not":{"multipleOf":3}}`, "not", "", true},
		{"if/then", `{"if":{"multipleOf":2},"then":{"minimum":1}}`, "if", "", true},
		{"maxContains without an exact negation of contains", `{"type":"array","contains":{"type":"object","patternProperties":{"^a":{"type":"string"}}},"maxContains":2}`, "maxContains", "", true},
		{"defined format that cannot be written", `{"type":"string","format":"color"}`, "format", "", true},
		{"multipleOf beyond the automaton limit", `{"type":"integer","multipleOf":0.123456789}`, "multipleOf", "", true},
		{"overlapping oneOf", `{"oneOf":[{"type":"integer"},{"multipleOf":3}]}`, "oneOf", "/oneOf", true},
		{"malformed dependentRequired", `{"type":"object","dependentRequired":{"a":"b"}}`, "dependentRequired", "", true},
		{"number bound with too many fraction digits", `{"type":"number","exclusiveMinimum":1e-2000}`, "exclusiveMinimum", "", true},
		{"lookaround in pattern", `{"type":"string","pattern":"a(?=b)"}`, "pattern", "", true},
		{"remote $ref", `{"$ref":"other.json#/a"}`, "$ref", "", false},
		{"dangling $ref", `{"properties":{"a~b":{"$ref":"#/$defs/none"}}}`, "$ref", "/properties/a~0b", false},
		{"left-recursive $ref", `{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}]}},"$ref":"#/$defs/a"}`, "$ref", "/$defs/a/anyOf/0", false},
		{"unknown type", `{"type":"kaboom"}`, "type", "", false},
		{"type not a string", `{"type":123}`, "type", "", false},
		{"false schema", `false`, "", "", false},
		{"invalid JSON", `{"type":`, "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := schema.FromJSONSchema([]byte(tc.schema))
			var se *schema.SchemaError
			require.True(t, errors.As(err, &se), "want a *SchemaError, got %v", err)
			assert.Equal(t, tc.keyword, se.Keyword, se.Error())
			assert.Equal(t, tc.pointer, se.Pointer, se.Error())
			g, ign, err := schema.FromJSONSchema([]byte(tc.schema), schema.Lenient())
			if tc.lenientOK {
				require.NoError(t, err)
				require.NotEmpty(t, ign)
				assert.Equal(t, tc.keyword, ign[0].Keyword)
				newChecker(t, g)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

// TestAnnotationsIgnored: annotations and unknown vocabulary neither fail nor
// count as ignored.
func TestAnnotationsIgnored(t *testing.T) {
	_, ign, err := schema.FromJSONSchema([]byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x","title":"t",
		"description":"d","examples":[1],"default":1,"$comment":"c","readOnly":true,"deprecated":true,"x-vendor":{"not":1},"type":"integer"}`))
	require.NoError(t, err)
	assert.Empty(t, ign)
}

// TestNotForms: the forms of "not" a grammar can express.
func TestNotForms(t *testing.T) {
	g, _, err := schema.FromJSONSchema([]byte(`{"not":{"type":["string","object"]}}`))
	require.NoError(t, err)
	c := newChecker(t, g)
	for s, want := range map[string]bool{`1`: true, `null`: true, `[]`: true, `"x"`: false, `{}`: false} {
		assert.Equal(t, want, c.accepts(s), s)
	}
	g, _, err = schema.FromJSONSchema([]byte(`{"type":"object","additionalProperties":{"not":{}},"properties":{"a":{"type":"integer"}}}`))
	require.NoError(t, err)
	c = newChecker(t, g)
	assert.True(t, c.accepts(`{"a":1}`))
	assert.False(t, c.accepts(`{"b":1}`))
}

// TestPatternTopLevelAlternation: each alternative of an unanchored pattern is
// anchored on its own side only.
func TestPatternTopLevelAlternation(t *testing.T) {
	g, _, err := schema.FromJSONSchema([]byte(`{"type":"string","pattern":"^all|tags$"}`))
	require.NoError(t, err)
	c := newChecker(t, g)
	for s, want := range map[string]bool{`"all"`: true, `"allx"`: true, `"tags"`: true, `"xtags"`: true, `"xall"`: false, `"tagsx"`: false} {
		assert.Equal(t, want, c.accepts(s), s)
	}
}
