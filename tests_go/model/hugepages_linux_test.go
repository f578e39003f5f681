package model_test

import (
	"bufio"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/model"
)

// anonHugeKiB reads AnonHugePages (KiB) of this process from /proc/self/smaps_rollup.
func anonHugeKiB(t *testing.T) int {
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		t.Skipf("no smaps_rollup: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "AnonHugePages:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			require.NoError(t, err)
			return kb
		}
	}
	t.Skip("smaps_rollup has no AnonHugePages")
	return 0
}

// Packed weights sit on transparent huge pages where the kernel offers them on request
// (THP "madvise" or "always"): decode streams every weight per token, and 4 KiB pages
// cost a TLB miss per 64 cache lines (measured on the 2-core Zen 3 guest: one worker
// streams an f32 panel product at 20-21 GB/s on huge pages, 14-17 GB/s on 4 KiB).
func TestCPUWeightsOnHugePages(t *testing.T) {
	thp, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(thp), "[never]") {
		t.Skipf("transparent huge pages unavailable (%q, %v)", thp, err)
	}
	// Earlier tests' engines leave garbage weight slabs on huge pages: free them now, so
	// that a collection during this test cannot lower the count it measures.
	runtime.GC()
	debug.FreeOSMemory()
	before := anonHugeKiB(t)
	e := model.NewCPU(2)
	defer e.Close()
	const rows, cols = 16384, 1024 // 64 MiB of f32
	r := rand.New(rand.NewPCG(3, 3))
	w, err := e.Upload("w", dense(rows, cols, randSlice(r, rows*cols)))
	require.NoError(t, err)
	after := anonHugeKiB(t)
	assert.GreaterOrEqual(t, after-before, 48<<10, "KiB of the 64 MiB weight on huge pages (THP %q)", strings.TrimSpace(string(thp)))
	_ = w
}
