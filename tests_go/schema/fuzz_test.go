package schema_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/schema"
)

// FuzzFromJSONSchema: any input converts or fails with an error, never a
// panic, and a returned grammar always parses.
func FuzzFromJSONSchema(f *testing.F) {
	for _, s := range []string{
		`{}`, `true`, `{"type":"object","properties":{"a":{"type":"integer","minimum":-5,"maximum":300}},"required":["a"]}`,
		`{"type":"string","pattern":"^[a-z]{2,5}$","maxLength":4}`, `{"anyOf":[{"type":"null"},{"$ref":"#/$defs/x"}],"$defs":{"x":{"type":"array","items":{"$ref":"#"}}}}`,
		`{"oneOf":[{"const":1},{"enum":["a",[1,{"b":null}]]}]}`, `{"type":"number","minimum":0,"exclusiveMaximum":10,"multipleOf":0.5}`,
		`{"allOf":[{"properties":{"a":{}},"additionalProperties":false},{"patternProperties":{"^b":{}}}]}`,
		`{"type":"object","minProperties":2,"maxProperties":3,"propertyNames":{"pattern":"^[a-z]+$"}}`,
		`{"items":[{"format":"date"},{"format":"ipv6"}],"additionalItems":{"format":"uri"},"minItems":1}`,
		`{"type":"object","properties":{"ax":{}},"patternProperties":{"x$":{"minLength":2},"^a":false,"b":{"type":"integer"}},"required":["ax"]}`,
		`{"type":"string","pattern":"^[a-z]+(-[a-z]+)*$","minLength":2,"maxLength":9,"not":{"enum":["ab","cd"]}}`,
		`{"oneOf":[{"required":["a"]},{"required":["b"],"maxProperties":2}],"not":{"not":{"type":"object"}}}`,
		`{"if":{"properties":{"k":{"const":"a"}}},"then":{"required":["n"]},"else":{"dependentRequired":{"m":["o"]}}}`,
		`{"enum":["\ud800", "a", "ab", "abc", "b"]}`,
		`{"$defs":{"d":{"type":"array","items":{"$ref":"#/$defs/d"},"minItems":1}},"anyOf":[{"$ref":"#/$defs/d"},{"type":"null"}]}`,
		`{"$id":"http://ex/r.json","properties":{"x":{"$id":"s.json","$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a"},"y":{"$ref":"s.json#t"}},"$defs":{"t":{"$id":"s.json#t","$anchor":"t"}}}`,
		`{"$id":"http://ex/root","$ref":"list","$defs":{"f":{"$dynamicAnchor":"i","type":"string"},"list":{"$id":"list","items":{"$dynamicRef":"#i"},"$defs":{"i":{"$dynamicAnchor":"i"}}}}}`,
		`{"type":"array","prefixItems":[{"type":"string"}],"contains":{"const":1},"minContains":2,"maxContains":3,"maxItems":6}`,
		`{"type":"array","uniqueItems":true,"items":{"enum":[1,"a",null,[1],{"b":2}]},"minItems":2}`,
		`{"type":"object","properties":{"a":{}},"allOf":[{"$ref":"#/$defs/b"}],"unevaluatedProperties":false,"$defs":{"b":{"properties":{"b":{}}}}}`,
		`{"enum":[1,2,3,"x",[1,1]],"not":{"multipleOf":2},"if":{"type":"string"},"then":{"minLength":2},"uniqueItems":true}`,
		`{"type":"number","minimum":-1.25,"exclusiveMaximum":100,"multipleOf":0.75}`,
		`{"type":"string","format":"idn-hostname","maxLength":20}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://ex/a.json","properties":{"b":{"id":"b.json","definitions":{"c":{"type":"integer"}},"items":{"$ref":"#/definitions/c"}}}}`,
	} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		opts := []schema.Option{schema.WithWhitespace(schema.Whitespace(mode % 3))}
		if mode&4 != 0 {
			opts = append(opts, schema.Lenient())
		}
		if mode&8 != 0 {
			opts = append(opts, schema.LlamaCppCompat())
		}
		if mode&16 != 0 {
			opts = append(opts, schema.ExactTypes())
		}
		opts = append(opts, schema.WithDraft(schema.Draft(mode>>5%5)))
		g, _, err := schema.FromJSONSchema(data, opts...)
		if err == nil && !json.Valid(data) {
			t.Fatalf("text that is not JSON converted: %q", data)
		}
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("a bug, not a schema problem: %v\nschema: %s", err, data)
			}
			return
		}
		want, err := gbnf.Parse(g)
		if err != nil {
			t.Fatalf("grammar does not parse: %v\nschema: %s\n%s", err, data, g)
		}
		// Convert hands the same rules to gbnf.ParseRules: the same grammar
		c, err := schema.Convert(data, opts...)
		if err != nil {
			t.Fatalf("FromJSONSchema converted, Convert did not: %v\nschema: %s", err, data)
		}
		if c.Text() != g || !reflect.DeepEqual(want, c.Grammar) {
			t.Fatalf("Convert's grammar is not gbnf.Parse of FromJSONSchema's text\nschema: %s", data)
		}
	})
}

// FuzzFromRegex: any pattern converts or fails with an error, never a panic,
// and a returned grammar always parses.
func FuzzFromRegex(f *testing.F) {
	for _, p := range regexPatterns {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		g, err := schema.FromRegex(p)
		if err != nil {
			return
		}
		if _, err := gbnf.Parse(g); err != nil {
			t.Fatalf("grammar does not parse: %v\npattern %q\n%s", err, p, g)
		}
	})
}
