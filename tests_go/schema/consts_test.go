package schema_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tetherlm/tether/gocore/schema"
)

// TestConstantsDecideEveryKeyword: a schema with enum or const accepts
// exactly its values that satisfy the rest of it, with not, if/then/else,
// oneOf, uniqueItems, contains, propertyNames and dependencies decided on
// each value (none of which a grammar could enforce in general).
func TestConstantsDecideEveryKeyword(t *testing.T) {
	cases := []schemaCase{
		{`{"enum":[1,2,3,4,6],"not":{"multipleOf":2}}`, []string{`1`, `3`}, []string{`2`, `4`, `6`}},
		{`{"enum":["a","bb","bc"],"if":{"minLength":2},"then":{"pattern":"^b"},"else":{"const":"x"}}`, []string{`"bb"`, `"bc"`}, []string{`"a"`}},
		{`{"const":{"a":1},"oneOf":[{"required":["a"]},{"required":["b"]}]}`, []string{`{"a":1}`}, []string{`{}`}},
		{`{"enum":[{"a":1,"b":2},{"a":1}],"oneOf":[{"required":["a"]},{"required":["b"]}]}`, []string{`{"a":1}`}, []string{`{"a":1,"b":2}`}},
		{`{"enum":[[1,1],[1,2]],"uniqueItems":true}`, []string{`[1,2]`}, []string{`[1,1]`}},
		{`{"enum":[[1,2],[3]],"contains":{"const":3}}`, []string{`[3]`}, []string{`[1,2]`}},
		{`{"enum":[{"ab":1},{"a":1}],"propertyNames":{"maxLength":1}}`, []string{`{"a":1}`}, []string{`{"ab":1}`}},
		{`{"enum":[{"a":1},{"a":1,"b":2}],"dependentRequired":{"a":["b"]}}`, []string{`{"a":1,"b":2}`}, []string{`{"a":1}`}},
		{`{"$defs":{"odd":{"not":{"multipleOf":2}}},"enum":[1,2],"allOf":[{"$ref":"#/$defs/odd"}]}`, []string{`1`}, []string{`2`}},
	}
	checkSchemaCases(t, cases)
	_, _, err := schema.FromJSONSchema([]byte(`{"enum":[2,4],"not":{"multipleOf":2}}`))
	assert.ErrorContains(t, err, "no value of the enum/const satisfies the schema")
}
