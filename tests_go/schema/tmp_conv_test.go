package schema_test

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/schema"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

func BenchmarkTmpConv(b *testing.B) {
	name := os.Getenv("TMP_SCHEMA")
	f, err := os.Open(testdata.Shared(b, "jsonschemabench/maskbench-dev.jsonl"))
	require.NoError(b, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	var raw []byte
	for sc.Scan() {
		var rec struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		}
		require.NoError(b, json.Unmarshal(sc.Bytes(), &rec))
		if rec.Name == name {
			raw = rec.Schema
		}
	}
	require.NotNil(b, raw)
	opt := schema.WithWhitespace(schema.Flexible)
	b.ResetTimer()
	for range b.N {
		_, text, _, err := schema.Grammar(raw, opt)
		require.NoError(b, err)
		b.ReportMetric(float64(len(text)), "bytes")
	}
}
