package schema_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tetherlm/tether/gocore/schema"
)

// TestOneOfDisjointByBounds: oneOf branches that lengths, item or property
// counts or numeric bounds keep apart are exclusive as written; where the
// bounds meet, exactly-one needs a negation (refused here for a format).
func TestOneOfDisjointByBounds(t *testing.T) {
	cases := []schemaCase{
		{`{"oneOf":[{"maxLength":0},{"format":"semver","minLength":1}]}`, []string{`""`, `"a"`}, []string{`1`}},
		{`{"oneOf":[{"type":"integer","maximum":5},{"type":"number","exclusiveMinimum":5}]}`, []string{`5`, `5.5`, `-3`}, []string{`"5"`}},
		{`{"oneOf":[{"type":"array","maxItems":1},{"type":"array","minItems":2,"items":{"type":"integer"}}]}`, []string{`[]`, `["a"]`, `[1,2]`}, []string{`["a","b"]`}},
		{`{"oneOf":[{"type":"object","maxProperties":0},{"type":"object","minProperties":1}]}`, []string{`{}`, `{"a":1}`}, []string{`[]`}},
	}
	checkSchemaCases(t, cases)
	_, _, err := schema.FromJSONSchema([]byte(`{"oneOf":[{"type":"number","maximum":5},{"type":"number","minimum":5,"title":"x"}]}`))
	assert.NoError(t, err, "5 meets both: the bounds' negations make the branches exclusive")
	_, _, err = schema.FromJSONSchema([]byte(`{"oneOf":[{"type":"string","maxLength":3,"format":"hostname"},{"type":"string","minLength":3,"format":"ipv4"}]}`))
	assert.ErrorContains(t, err, `"oneOf"`, "length 3 meets both, and a format has no negation")
}

// TestOneOfReadsTypesAsJSONSchemaDoes: whether oneOf branches can both match
// is judged on the schema, not on the types each branch's grammar keeps: a
// string satisfies {"minimum": 5} and a number {"minLength": 1}, so each
// branch keeps only what the other rejects (issue 26: before, "a" and 7 were
// accepted, though both match both branches).
func TestOneOfReadsTypesAsJSONSchemaDoes(t *testing.T) {
	cases := []schemaCase{
		{`{"oneOf":[{"minLength":1},{"minimum":5}]}`, []string{`""`, `4`, `-1.5`}, []string{`"a"`, `7`, `5`, `null`, `{}`}},
		{`{"oneOf":[{"required":["a"]},{"required":["b"]}]}`, []string{`{"a":1}`, `{"b":1}`}, []string{`{"a":1,"b":2}`, `{}`, `"s"`, `1`}},
		{`{"oneOf":[{"properties":{"k":{"const":"a"}},"required":["k"]},{"properties":{"k":{"const":"b"}},"required":["k"]}]}`,
			[]string{`{"k":"a"}`, `{"k":"b"}`}, []string{`{"k":"c"}`, `[]`, `true`}},
	}
	checkSchemaCases(t, cases)
}
