package schema_test

import (
	"bufio"
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/schema"
	"github.com/tetherlm/tether/gocore/schema/schemabench"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// TestGrammarIsParseOfText: schema.Grammar's and schema.Convert's parsed grammar
// is gbnf.Parse of the text FromJSONSchema gives, equal in every field (rules
// handed to gbnf.ParseRules without a text, and the converter's own parse of
// recursive grammars, give the same grammar), Convert's Text and Rules are that
// text, and both fail where converting or parsing fails, for recursive,
// non-recursive and unsatisfiable schemas, schemas whose conversion defines
// rules the grammar leaves out, and every 7th MaskBench dev schema.
func TestGrammarIsParseOfText(t *testing.T) {
	docs := []string{
		`{"type":"integer","minimum":0,"maximum":99}`,
		`{"$ref":"#/$defs/n","$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"}}}}`,
		`{"type":"object","properties":{"next":{"$ref":"#"},"v":{"type":"string","pattern":"^a+$"}}}`,
		`{"type":"array","items":{"$ref":"#"},"minItems":1}`, // no finite instance
		`{"type":"string","pattern":"[a-"}`,
		`not json`,
		// conversions that define rules the root does not reach (a number
		// automaton, a key pattern, a contains branch): the grammar leaves
		// them out, Convert's parse of every rule defined is not used
		`{"multipleOf":0.0001}`,
		`{"patternProperties":{"[0-9]{2,}":{"type":"boolean"},"X_":{"type":"string"}}}`,
		`{"prefixItems":[true],"contains":{"type":"string"},"unevaluatedItems":false}`,
		`{"type":"object","properties":{"n":{"multipleOf":0.0001},"next":{"$ref":"#"}}}`, // and recursive
	}
	f, err := os.Open(testdata.Shared(t, "jsonschemabench/maskbench-dev.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	for i := 0; sc.Scan(); i++ {
		if i%7 != 0 {
			continue
		}
		var c schemabench.Case
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c))
		docs = append(docs, string(c.Schema))
	}
	compared := 0
	for _, d := range docs {
		g, text, ignored, err := schema.Grammar([]byte(d))
		_, cerr := schema.Convert([]byte(d))
		wantText, wantIgnored, wantErr := schema.FromJSONSchema([]byte(d))
		if wantErr != nil {
			require.Error(t, err, d)
			assert.Equal(t, wantErr.Error(), err.Error())
			require.Error(t, cerr, d)
			assert.Equal(t, wantErr.Error(), cerr.Error())
			continue
		}
		want, perr := gbnf.Parse(wantText)
		if perr != nil {
			require.Error(t, err, d)
			require.Error(t, cerr, d)
			continue
		}
		require.NoError(t, err, d)
		assert.Equal(t, wantText, text)
		assert.Equal(t, wantIgnored, ignored)
		require.Equal(t, gbnf.Format(want), gbnf.Format(g), "%.200s", d)
		require.True(t, reflect.DeepEqual(want, g), "schema.Grammar differs from gbnf.Parse of its text: %.200s", d)
		c, err := schema.Convert([]byte(d))
		require.NoError(t, err, d)
		require.True(t, reflect.DeepEqual(want, c.Grammar), "schema.Convert differs from gbnf.Parse of its text: %.200s", d)
		assert.Equal(t, wantText, c.Text())
		assert.Equal(t, wantText, gbnf.Text(c.Rules()))
		assert.Equal(t, wantIgnored, c.Ignored)
		compared++
	}
	assert.Greater(t, compared, 300)
}
