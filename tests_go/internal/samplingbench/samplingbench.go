// Package samplingbench holds what the sampler benchmarks share: the per-step
// median metric and the benchmark of grammar-aware sampling in both orders.
package samplingbench

import (
	"slices"
	"testing"
	"time"

	"github.com/tetherlm/tether/gocore/sampling"
)

// ReportP50 records the median of per-step durations as the metric "p50-ns".
func ReportP50(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds()), "p50-ns")
}

// GrammarModes benchmarks the default chain with grammar g over rows of logits, in
// two sub-benchmarks: sample_then_check (the chain samples, the grammar checks the
// pick) and mask_then_sample (the grammar masks first). The rows must favour tokens
// g allows, so that sample_then_check never resamples; it fails if it does.
func GrammarModes(b *testing.B, g sampling.Grammar, rows [][]float32) {
	for _, mode := range []struct {
		name         string
		grammarFirst bool
	}{{"sample_then_check", false}, {"mask_then_sample", true}} {
		b.Run(mode.name, func(b *testing.B) {
			p := sampling.DefaultParams()
			p.Seed = 1
			p.GrammarFirst = mode.grammarFirst
			s, _, err := sampling.NewSessionFromParams(p, g)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < 16; i++ {
				if _, err := s.Sample(rows[i%len(rows)]); err != nil {
					b.Fatal(err)
				}
			}
			ds := make([]time.Duration, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if _, err := s.Sample(rows[i%len(rows)]); err != nil {
					b.Fatal(err)
				}
				ds[i] = time.Since(t0)
			}
			b.StopTimer()
			if !mode.grammarFirst && s.Stats().Resamples != 0 {
				b.Fatalf("first pick rejected %d times", s.Stats().Resamples)
			}
			ReportP50(b, ds)
		})
	}
}
