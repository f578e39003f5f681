package schema_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tetherlm/tether/gocore/schema"
)

// TestUnevaluated: unevaluatedProperties/unevaluatedItems see what allOf and
// $ref evaluate; where the evaluated set depends on which branch matches (or
// on not, which evaluates nothing) the grammar stays narrower, never wider.
func TestUnevaluated(t *testing.T) {
	cases := []schemaCase{
		{`{"type":"object","properties":{"foo":{"type":"string"}},"allOf":[{"properties":{"bar":{"type":"string"}}}],"unevaluatedProperties":false}`,
			[]string{`{"foo":"a","bar":"b"}`, `{}`}, []string{`{"foo":"a","baz":1}`, `{"bar":1}`}},
		{`{"type":"object","$ref":"#/$defs/b","properties":{"foo":{}},"unevaluatedProperties":{"type":"integer"},"$defs":{"b":{"patternProperties":{"^x":{"type":"string"}}}}}`,
			[]string{`{"foo":true,"xa":"s","n":1}`}, []string{`{"xa":1}`, `{"n":"s"}`}},
		{`{"type":"object","allOf":[{"additionalProperties":true}],"unevaluatedProperties":false}`,
			[]string{`{"anything":1}`}, nil},
		{`{"type":"object","anyOf":[{"properties":{"a":{"type":"string"}}},{"properties":{"b":true}}],"unevaluatedProperties":false}`,
			[]string{`{}`}, []string{`{"c":1}`, `{"a":1}`}},
		{`{"type":"array","prefixItems":[{"type":"string"}],"allOf":[{"prefixItems":[true,{"type":"number"}]}],"unevaluatedItems":false}`,
			[]string{`["a",1]`, `["a"]`, `[]`}, []string{`["a",1,2]`, `[1]`}},
		{`{"type":"array","allOf":[{"prefixItems":[{"type":"string"}],"items":true}],"unevaluatedItems":false}`,
			[]string{`["a",1,true]`}, []string{`[1]`}},
	}
	// not evaluates nothing: "a" is unevaluated, and this schema accepts no instance
	_, _, err := schema.FromJSONSchema([]byte(`{"type":"object","allOf":[{"not":{"properties":{"a":{"type":"string"}}}}],"unevaluatedProperties":false}`))
	assert.ErrorContains(t, err, `"a" is not allowed`)
	checkSchemaCases(t, cases)
}
