package model_test

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/model"
)

// benchModel loads the checkpoint in $TETHER_BENCH_MODEL (e.g. bench_model.py's
// --model-dir output) on two threads, closed when the benchmark ends, and returns
// it with the benchmarks' 128-token prompt; without the variable the benchmark is
// skipped. TETHER_BENCH_BF16_MATH=1 loads it with model.WithBF16Math, TETHER_BENCH_INT8=1
// with model.WithInt8Weights, TETHER_BENCH_PACKED=0 (or 1) on a CPU engine made
// WithPackedPanels(false) (or true).
func benchModel(b *testing.B) (*model.Model, []int) {
	b.Helper()
	dir := os.Getenv("TETHER_BENCH_MODEL")
	if dir == "" {
		b.Skip("TETHER_BENCH_MODEL not set")
	}
	opts := []model.Option{model.WithThreads(2)}
	if os.Getenv("TETHER_BENCH_BF16_MATH") != "" {
		opts = append(opts, model.WithBF16Math())
	}
	if os.Getenv("TETHER_BENCH_INT8") != "" {
		opts = append(opts, model.WithInt8Weights())
	}
	if v := os.Getenv("TETHER_BENCH_PACKED"); v != "" {
		copts := []model.CPUOption{model.WithPackedPanels(v == "1")}
		if os.Getenv("TETHER_BENCH_BF16_MATH") != "" {
			copts = append(copts, model.WithBF16Products())
		}
		opts = []model.Option{model.WithEngine(model.NewCPU(2, copts...))}
	}
	m, err := model.Load(dir, opts...)
	require.NoError(b, err)
	b.Cleanup(func() { m.Close() })
	prompt := make([]int, 128)
	for i := range prompt {
		prompt[i] = 100 + i
	}
	return m, prompt
}

// BenchmarkDecodeStep runs one-token forward passes of the checkpoint in
// $TETHER_BENCH_MODEL (e.g. bench_model.py's --model-dir output) after a 128-token
// prefill, resetting the cache every 64 steps so the KV length matches the benchmark's.
func BenchmarkDecodeStep(b *testing.B) {
	m, prompt := benchModel(b)
	st := m.NewState()
	_, err := m.Forward(st, prompt)
	require.NoError(b, err)
	b.ReportAllocs()
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	i := 0
	for b.Loop() {
		if i%64 == 63 {
			b.StopTimer()
			st.Reset()
			_, err = m.Forward(st, prompt)
			require.NoError(b, err)
			b.StartTimer()
		}
		_, err := m.Forward(st, []int{5 + i%100})
		require.NoError(b, err)
		i++
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
	// CPU time per token (both workers, spinning included): on a loaded machine, where
	// wall time mostly measures the scheduler, this still tracks the kernels' stalls.
	cpu := time.Duration(ru1.Utime.Nano() - ru0.Utime.Nano() + ru1.Stime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/tok")
}

// BenchmarkPrefill runs 128-token prefills of the checkpoint in $TETHER_BENCH_MODEL.
func BenchmarkPrefill(b *testing.B) {
	m, prompt := benchModel(b)
	st := m.NewState()
	for b.Loop() {
		st.Reset()
		_, err := m.Forward(st, prompt)
		require.NoError(b, err)
	}
	b.ReportMetric(float64(b.N*len(prompt))/b.Elapsed().Seconds(), "tok/s")
}
