package schema_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/schema"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// checker judges texts against one converted grammar with a byte vocabulary.
type checker struct {
	m *engine.Matcher
}

func newChecker(t testing.TB, grammar string) *checker {
	t.Helper()
	g, err := gbnf.Parse(grammar)
	require.NoError(t, err, "the converter's grammar must parse:\n%s", grammar)
	gr, err := engine.Compile(g, engine.ByteVocabulary{})
	require.NoError(t, err, "the converter's grammar must compile:\n%s", grammar)
	return &checker{m: gr.NewMatcher()}
}

// accepts reports whether the grammar accepts all of s and can end there.
func (c *checker) accepts(s string) bool {
	c.m.Reset()
	if err := c.m.AcceptBytes([]byte(s)); err != nil {
		return false
	}
	return c.m.CanEnd()
}

// schemaCase is a schema with JSON texts its grammar must accept and reject.
type schemaCase struct {
	schema         string
	accept, reject []string
}

// checkSchemaCases converts each case's schema (with opts) and judges its texts.
func checkSchemaCases(t *testing.T, cases []schemaCase, opts ...schema.Option) {
	t.Helper()
	for _, tc := range cases {
		g, _, err := schema.FromJSONSchema([]byte(tc.schema), opts...)
		require.NoError(t, err, tc.schema)
		c := newChecker(t, g)
		for _, s := range tc.accept {
			assert.True(t, c.accepts(s), "%s should accept %s", tc.schema, s)
		}
		for _, s := range tc.reject {
			assert.False(t, c.accepts(s), "%s should reject %s", tc.schema, s)
		}
	}
}

// llamaCases is the part of llamacpp_cases.json these tests read.
type llamaCases struct {
	SchemaCases []struct {
		Name    string          `json:"name"`
		Schema  json.RawMessage `json:"schema"`
		Valid   []string        `json:"valid"`
		Invalid []string        `json:"invalid"`
	} `json:"schema_cases"`
	SchemaConversion []struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Expect string          `json:"expect"`
	} `json:"schema_conversion"`
}

func loadLlamaCases(t testing.TB) llamaCases {
	t.Helper()
	var lc llamaCases
	testdata.SharedJSON(t, "conformance/llamacpp_cases.json", &lc)
	return lc
}
