package schema_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/schema/schemabench"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// TestMaskBenchSoundness converts every schema of the development corpus and
// judges every instance: no invalid instance of a converted schema may be
// accepted, and at least 86% of the schemas must pass (convert, compile and
// judge every instance right). Cases are judged on GOMAXPROCS goroutines.
func TestMaskBenchSoundness(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus run skipped in -short mode")
	}
	f, err := os.Open(testdata.Shared(t, "jsonschemabench/maskbench-dev.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	s, err := schemabench.Run(f, schemabench.Options{})
	require.NoError(t, err)
	t.Logf("schemas %d, compiled %d, passing %d (%.1f%%), valid_rejected %d, invalid_accepted %d, conversion ms p50 %.3f p99 %.3f",
		s.Schemas, s.Compiled, s.Passing, s.PassingPercent, s.ValidRejected, s.InvalidAccepted, s.ConversionMS.P50, s.ConversionMS.P99)
	t.Logf("compile (schema -> compiled grammar, byte vocabulary) ms p50 %.3f p99 %.3f max %.3f, over 100 ms: %d %v",
		s.CompileMS.P50, s.CompileMS.P99, s.CompileMS.Max, s.CompileMS.Over100ms, s.SlowCompiles)
	t.Logf("compile errors by keyword: %v", s.CompileErrors)
	t.Logf("valid instances rejected in: %v", s.ValidRejectedCases)
	assert.Zero(t, s.InvalidAccepted, "invalid instances accepted in %v", s.InvalidAcceptedCases)
	// issue 12: at least 86% of the corpus passes (83.8% before it)
	assert.GreaterOrEqual(t, s.PassingPercent, 86.0, "MaskBench dev coverage")
}
