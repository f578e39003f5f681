package schema_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/schema"
)

// TestLlamaCppSchemaConversion: llama.cpp's schema_conversion vectors convert
// ("ok") or are refused with a *SchemaError ("fail"), read as llama.cpp reads
// schemas (LlamaCppCompat).
func TestLlamaCppSchemaConversion(t *testing.T) {
	lc := loadLlamaCases(t)
	require.NotEmpty(t, lc.SchemaConversion)
	for _, tc := range lc.SchemaConversion {
		t.Run(tc.Name, func(t *testing.T) {
			g, _, err := schema.FromJSONSchema(tc.Schema, schema.LlamaCppCompat())
			if tc.Expect == "ok" {
				require.NoError(t, err)
				newChecker(t, g)
				return
			}
			var se *schema.SchemaError
			assert.True(t, errors.As(err, &se), "want a *SchemaError, got %v", err)
		})
	}
}

// TestLlamaCppSchemaCases: the grammar of each schema_cases schema accepts its
// valid instances and rejects its invalid ones. Keywords llama.cpp ignores
// (uniqueItems) are ignored here too, leniently, and logged.
func TestLlamaCppSchemaCases(t *testing.T) {
	lc := loadLlamaCases(t)
	require.NotEmpty(t, lc.SchemaCases)
	for _, tc := range lc.SchemaCases {
		t.Run(tc.Name, func(t *testing.T) {
			g, _, err := schema.FromJSONSchema(tc.Schema, schema.LlamaCppCompat())
			if err != nil {
				var ign []schema.Ignored
				g, ign, err = schema.FromJSONSchema(tc.Schema, schema.LlamaCppCompat(), schema.Lenient())
				require.NoError(t, err)
				t.Logf("converted leniently, ignoring %v", ign)
			}
			c := newChecker(t, g)
			for _, s := range tc.Valid {
				assert.True(t, c.accepts(s), "valid %q rejected by\n%s", s, g)
			}
			for _, s := range tc.Invalid {
				assert.False(t, c.accepts(s), "invalid %q accepted by\n%s", s, g)
			}
		})
	}
}
