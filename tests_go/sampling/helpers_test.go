package sampling_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/tetherlm/tether/gocore/tokenmask"

	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/sampling"
)

// conformancePath finds shared/conformance/llamacpp_sampling_cases.json: $TETHER_SHARED
// first, then ../shared next to the repository (the project's layout).
func conformancePath(t testing.TB) string {
	t.Helper()
	var dirs []string
	if d := os.Getenv("TETHER_SHARED"); d != "" {
		dirs = append(dirs, d)
	}
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..", "..")
	dirs = append(dirs, filepath.Join(repo, "..", "shared"), filepath.Join(repo, "shared"))
	for _, d := range dirs {
		p := filepath.Join(d, "conformance", "llamacpp_sampling_cases.json")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("llamacpp_sampling_cases.json not found (set TETHER_SHARED)")
	return ""
}

// requireParamErr asserts err is a *sampling.ParamError naming param.
func requireParamErr(t *testing.T, err error, param string) {
	t.Helper()
	require.Error(t, err)
	var pe *sampling.ParamError
	require.True(t, errors.As(err, &pe), "want *ParamError, got %T: %v", err, err)
	require.Equal(t, param, pe.Param, "error: %v", err)
	require.Contains(t, err.Error(), param)
}

// splitmix is a tiny deterministic generator for test data.
type splitmix uint64

func (s *splitmix) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (s *splitmix) float() float64 { return float64(s.next()>>11) / (1 << 53) }

// randomLogits returns n logits shaped like a language model's: mostly around 0 with a
// long upper tail.
func randomLogits(n int, seed uint64) []float32 {
	s := splitmix(seed)
	out := make([]float32, n)
	for i := range out {
		// Box-Muller normal, scaled, plus a sparse boost for a few "likely" tokens
		u1, u2 := s.float(), s.float()
		z := math.Sqrt(-2*math.Log(u1+1e-300)) * math.Cos(2*math.Pi*u2)
		v := 2 * z
		if s.next()%1000 == 0 {
			v += 8
		}
		out[i] = float32(v)
	}
	return out
}

// setGrammar is a test Grammar: an allowed set per step (the last set repeats).
type setGrammar struct {
	steps    [][]int
	step     int
	accepted []int
	allowed  map[int]bool
}

func newSetGrammar(steps ...[]int) *setGrammar {
	g := &setGrammar{steps: steps}
	g.load()
	return g
}

func (g *setGrammar) load() {
	i := min(g.step, len(g.steps)-1)
	g.allowed = map[int]bool{}
	for _, id := range g.steps[i] {
		g.allowed[id] = true
	}
}

func (g *setGrammar) FillMask(mask tokenmask.Mask) error {
	clear(mask)
	for id := range g.allowed {
		mask.Set(id)
	}
	return nil
}

func (g *setGrammar) IsAllowed(id int) (bool, error) { return g.allowed[id], nil }

func (g *setGrammar) AcceptToken(id int) error {
	if !g.allowed[id] {
		return errors.New("token not allowed by the test grammar")
	}
	g.accepted = append(g.accepted, id)
	g.step++
	g.load()
	return nil
}

var _ sampling.Grammar = (*setGrammar)(nil)
