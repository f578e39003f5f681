package schema_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/schema"
	"github.com/tetherlm/tether/gocore/schema/schemabench"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// compilePhases is one schema's compile cost, split by phase.
type compilePhases struct {
	name                         string
	convert, parse, build, first time.Duration
	cpu                          time.Duration // process CPU time, all phases
	err                          string
}

func (p compilePhases) total() time.Duration { return p.convert + p.parse + p.build + p.first }

// TestMaskBenchCompileTimes is a tool, not a check: with TETHER_COMPILE_TIMES=1 it
// times every schema of the MaskBench dev split as a user pays for it (schema text
// -> GBNF -> parsed grammar -> engine.Compile for the real Llama-3 vocabulary,
// prepared once outside timing -> first mask), prints the distribution
// (p50/p90/p99/max, count over 100 ms) and the slowest schemas with their phase
// breakdown, in wall time and in process CPU time (on a shared machine the wall
// time carries other people's load). TETHER_COMPILE_TOP sets how many (default 20); TETHER_COMPILE_ONLY
// times only the schemas whose name matches exactly (handy under -cpuprofile).
//
//	TETHER_COMPILE_TIMES=1 go test ./tests_go/schema -run MaskBenchCompileTimes -v -timeout 30m
func TestMaskBenchCompileTimes(t *testing.T) {
	if os.Getenv("TETHER_COMPILE_TIMES") == "" {
		t.Skip("set TETHER_COMPILE_TIMES=1 to time every MaskBench dev compile")
	}
	top := 20
	if s := os.Getenv("TETHER_COMPILE_TOP"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		top = n
	}
	only := os.Getenv("TETHER_COMPILE_ONLY")
	v := llama3Vocab(t)
	mask := make([]uint32, (v.Size()+31)/32)
	f, err := os.Open(testdata.Shared(t, "jsonschemabench/maskbench-dev.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	var res []compilePhases
	for sc.Scan() {
		var c schemabench.Case
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c))
		if only != "" && c.Name != only {
			continue
		}
		p := compilePhases{name: c.Name}
		c0 := cpuTime()
		t0 := time.Now()
		// schema.Grammar: the text is parsed once (a recursive schema's
		// grammar is parsed by the converter's productivity check).
		pg, _, _, err := schema.Grammar(c.Schema)
		p.convert = time.Since(t0)
		if err != nil {
			p.err = "convert: " + err.Error()
			res = append(res, p)
			continue
		}
		t0 = time.Now()
		gr, err := engine.Compile(pg, v)
		p.build = time.Since(t0)
		if err != nil {
			p.err = "compile: " + err.Error()
			res = append(res, p)
			continue
		}
		t0 = time.Now()
		if err := gr.NewMatcher().FillMask(mask); err != nil {
			p.err = "mask: " + err.Error()
		}
		p.first = time.Since(t0)
		p.cpu = cpuTime() - c0
		res = append(res, p)
	}
	require.NoError(t, sc.Err())
	var ok []compilePhases
	for _, p := range res {
		if p.err == "" {
			ok = append(ok, p)
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	// The distribution of wall time, then of CPU time (the machine may be
	// shared: CPU time is what the compile itself costs).
	for _, kind := range []string{"wall", "CPU"} {
		of := func(p compilePhases) time.Duration {
			if kind == "CPU" {
				return p.cpu
			}
			return p.total()
		}
		sort.Slice(ok, func(i, j int) bool { return of(ok[i]) < of(ok[j]) })
		pct := func(q float64) float64 {
			if len(ok) == 0 {
				return 0
			}
			return ms(of(ok[int(q*float64(len(ok)-1))]))
		}
		over := 0
		for _, p := range ok {
			if of(p) > 100*time.Millisecond {
				over++
			}
		}
		t.Logf("schemas %d, compiled %d; schema -> first mask, %s ms: p50 %.3f p90 %.3f p99 %.3f max %.3f; over 100 ms: %d",
			len(res), len(ok), kind, pct(0.5), pct(0.9), pct(0.99), pct(1), over)
	}
	// ok is sorted by CPU time, fastest first.
	t.Logf("%-48s %9s %9s %9s %9s %9s %9s", "slowest (CPU), ms", "cpu", "wall", "conv+parse", "-", "compile", "mask")
	for i := 0; i < top && i < len(ok); i++ {
		p := ok[len(ok)-1-i]
		t.Logf("%-48s %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f", p.name, ms(p.cpu), ms(p.total()), ms(p.convert), ms(p.parse), ms(p.build), ms(p.first))
	}
	if os.Getenv("TETHER_COMPILE_ERRORS") != "" {
		for _, p := range res {
			if p.err != "" {
				fmt.Printf("%s: %s\n", p.name, p.err)
			}
		}
	}
}
