//go:build cuda

package modelcuda_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/model"
	"github.com/tetherlm/tether/gocore/model/cuda"
)

// benchModel loads the checkpoint TETHER_CUDA_BENCH_MODEL names (the device check's
// run.sh gives its llama1b-bf16 model) on a CUDA engine, warmed up; without the variable
// the benchmark is skipped (benchmarks are not part of the tests).
func benchModel(b *testing.B) *model.Model {
	dir := os.Getenv("TETHER_CUDA_BENCH_MODEL")
	if dir == "" {
		b.Skip("TETHER_CUDA_BENCH_MODEL names no model directory")
	}
	m, err := model.Load(dir, model.WithEngine(newGPU(b, cuda.Options{})))
	require.NoError(b, err)
	b.Cleanup(func() { m.Close() })
	require.NoError(b, m.Warm(m.NewState()))
	return m
}

// prefilled loads the benchmark model and runs a 128-token prompt on a new state; the
// time of that first prompt, which pays what the 32-token warm-up did not (buffers of
// the new size, library kernels for the new shapes), is reported as first-ms.
func prefilled(b *testing.B) (*model.Model, *model.State, []int) {
	m := benchModel(b)
	s := m.NewState()
	ids := make([]int, 128)
	for i := range ids {
		ids[i] = (i*7919 + 11) % m.Config().VocabSize
	}
	t := time.Now()
	_, err := m.Forward(s, ids)
	require.NoError(b, err)
	b.ReportMetric(float64(time.Since(t).Microseconds())/1e3, "first-ms")
	return m, s, ids
}

// BenchmarkPrefill128: the forward pass of a 128-token prompt (logits of the last
// position), on a state whose buffers already have that size.
func BenchmarkPrefill128(b *testing.B) {
	m, s, ids := prefilled(b)
	for b.Loop() {
		s.Reset()
		if _, err := m.Forward(s, ids); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(128*b.N)/b.Elapsed().Seconds(), "tok/s")
}

// BenchmarkDecode: single-token forward calls (replayed CUDA graphs) after a 128-token
// prompt, the logits copied to the host each step; the sequence starts over (untimed)
// every 256 steps. No sampling: the engine's share of a decode step.
func BenchmarkDecode(b *testing.B) {
	m, s, ids := prefilled(b)
	id := ids[0]
	for b.Loop() {
		if s.Pos() >= 128+256 {
			b.StopTimer()
			s.Reset()
			if _, err := m.Forward(s, ids); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if _, err := m.Forward(s, []int{id}); err != nil {
			b.Fatal(err)
		}
		id = (id + 1) % m.Config().VocabSize
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}
