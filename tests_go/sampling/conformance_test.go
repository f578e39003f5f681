package sampling_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/sampling/conformance"
)

// TestLlamaCppVectors runs every sampler vector of llama.cpp's test-sampling.cpp.
func TestLlamaCppVectors(t *testing.T) {
	f, err := conformance.Load(conformancePath(t))
	require.NoError(t, err)
	require.NotEmpty(t, f.Cases)
	for _, c := range f.Cases {
		t.Run(c.ID, func(t *testing.T) {
			skip, err := conformance.RunCase(c)
			if skip != "" {
				t.Skip(skip)
			}
			require.NoError(t, err, c.Notes)
		})
	}
	for _, q := range f.QueueCases {
		t.Run(q.ID, func(t *testing.T) {
			require.NoError(t, conformance.RunQueueCase(q))
		})
	}
}

// TestLlamaCppVectorsReport checks the summary the CLI prints: all pass, only the
// dist_rng cases (whose generator is not in the data) are skipped.
func TestLlamaCppVectorsReport(t *testing.T) {
	f, err := conformance.Load(conformancePath(t))
	require.NoError(t, err)
	rep := conformance.Run(f)
	require.True(t, rep.OK())
	passed, failed, skipped := rep.Totals()
	require.Equal(t, 0, failed)
	require.Equal(t, len(f.Cases)+len(f.QueueCases), passed+skipped)
	require.Equal(t, 2, skipped)
	require.Equal(t, 2, rep["dist_rng"].Skipped)
	for _, name := range []string{"temp", "temp_ext", "top_k", "top_p", "min_p", "xtc", "typical",
		"penalties", "dry", "top_n_sigma", "p_less", "queue"} {
		require.NotNil(t, rep[name], name)
		require.Positive(t, rep[name].Passed, name)
	}
}
