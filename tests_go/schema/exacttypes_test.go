package schema_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/schema"
)

// TestExactTypes: with ExactTypes a schema without "type" accepts every type
// whose keywords it satisfies, and numeric enum/const values in any spelling
// with trailing zeros; by default it is narrowed to the types its keywords
// are about, and numbers are written as in the schema.
func TestExactTypes(t *testing.T) {
	cases := []struct {
		schema                     string
		exactAccept, defaultReject []string // accepted with ExactTypes, rejected without
		reject                     []string // rejected in both modes
	}{
		{`{"required":["a"]}`, []string{`12`, `"x"`, `null`, `[1]`, `{"a":1}`}, []string{`12`, `"x"`}, []string{`{}`, `{"b":1}`}},
		{`{"minLength":2,"maximum":5}`, []string{`"ab"`, `5`, `true`, `{}`}, []string{`true`, `{}`}, []string{`"a"`, `6`}},
		{`{"const":1}`, []string{`1`, `1.0`, `1.000`}, []string{`1.0`}, []string{`1.5`, `10`, `"1"`}},
		{`{"enum":[2.5,"a"]}`, []string{`2.5`, `2.50`, `"a"`}, []string{`2.50`}, []string{`2.51`, `25`}},
	}
	for _, tc := range cases {
		ge, _, err := schema.FromJSONSchema([]byte(tc.schema), schema.ExactTypes())
		require.NoError(t, err, tc.schema)
		gd, _, err := schema.FromJSONSchema([]byte(tc.schema))
		require.NoError(t, err, tc.schema)
		exact, def := newChecker(t, ge), newChecker(t, gd)
		for _, s := range tc.exactAccept {
			assert.True(t, exact.accepts(s), "ExactTypes %s should accept %s", tc.schema, s)
		}
		for _, s := range tc.defaultReject {
			assert.False(t, def.accepts(s), "default %s should reject %s", tc.schema, s)
		}
		for _, s := range tc.reject {
			assert.False(t, exact.accepts(s), "ExactTypes %s should reject %s", tc.schema, s)
			assert.False(t, def.accepts(s), "default %s should reject %s", tc.schema, s)
		}
	}
}
