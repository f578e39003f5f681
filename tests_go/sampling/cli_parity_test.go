package sampling_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/sampling"
	"github.com/tetherlm/tether/gocore/vocab"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

// tetherCLI builds the tether command once per test run (it links the tokenizers'
// Rust library from build/lib, which `make setup` provides).
func tetherCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		root := testdata.ModuleRoot()
		dir, err := os.MkdirTemp("", "tether-cli-")
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(dir, "tether")
		cmd := exec.Command("go", "build", "-o", cliPath, "./gocore/cmd/tether")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_LDFLAGS=-L"+filepath.Join(root, "build", "lib"), "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			cliErr = &buildError{out: string(out), err: err}
		}
	})
	require.NoError(t, cliErr)
	return cliPath
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string {
	return "building the tether CLI: " + e.err.Error() + "\n" + e.out
}

// TestSessionAndCLIPickTheSameTokens: for the same logits rows and seed, a
// gocore/sampling Session and `tether generate --logits` (the CLI's flags parsed into
// Params) pick identical tokens over 1,000 steps, for every sampler.
// tests_py/test_sampling.py checks the Python processor against the CLI the same way.
func TestSessionAndCLIPickTheSameTokens(t *testing.T) {
	const steps, nv, seed = 1000, 256, 77
	prompt := []int{5, 9, 5, 9, 17, 198, 25}
	llama3 := testdata.TokenizerFile(t, "llama3", "tokenizer.json")
	cli := tetherCLI(t)
	cases := []struct {
		name   string
		params map[string]string // llama.cpp names -> values, as typed on the command line
		bias   []string
		dry    bool
	}{
		{name: "default"},
		{name: "greedy", params: map[string]string{"temp": "0"}},
		{name: "dist", params: map[string]string{"top_k": "0", "top_p": "1", "min_p": "0", "temp": "1"}},
		{name: "temperature", params: map[string]string{"samplers": "temperature", "temp": "0.7"}},
		{name: "dynatemp", params: map[string]string{"samplers": "top_k;temperature", "top_k": "20", "temp": "0.9", "dynatemp_range": "0.5", "dynatemp_exponent": "1.5"}},
		{name: "top_k", params: map[string]string{"samplers": "top_k;temperature", "top_k": "5", "temp": "1"}},
		{name: "top_p", params: map[string]string{"samplers": "top_p;temperature", "top_p": "0.8", "temp": "1"}},
		{name: "min_p", params: map[string]string{"samplers": "min_p;temperature", "min_p": "0.1", "temp": "1"}},
		{name: "typ_p", params: map[string]string{"samplers": "typ_p;temperature", "typ_p": "0.9", "temp": "1"}},
		{name: "xtc", params: map[string]string{"samplers": "top_k;xtc;temperature", "top_k": "30", "xtc_probability": "0.5", "xtc_threshold": "0.05", "temp": "1"}},
		{name: "top_n_sigma", params: map[string]string{"samplers": "top_n_sigma;temperature", "top_n_sigma": "1", "temp": "1"}},
		{name: "min_keep", params: map[string]string{"samplers": "top_p;min_p;temperature", "top_p": "0.3", "min_p": "0.5", "min_keep": "5", "temp": "1"}},
		{name: "penalties", params: map[string]string{"samplers": "penalties;top_k;temperature", "top_k": "8", "penalty_last_n": "32", "penalty_repeat": "1.3", "penalty_freq": "0.2", "penalty_present": "0.3", "temp": "1"}},
		{name: "dry", dry: true, params: map[string]string{"samplers": "dry;top_k;temperature", "top_k": "6", "dry_multiplier": "0.8", "dry_base": "1.75", "dry_allowed_length": "2", "dry_penalty_last_n": "64", "temp": "1"}},
		{name: "mirostat1", params: map[string]string{"mirostat": "1", "mirostat_tau": "4", "mirostat_eta": "0.1", "temp": "1"}},
		{name: "mirostat2", params: map[string]string{"mirostat": "2", "mirostat_tau": "3", "mirostat_eta": "0.2", "temp": "1"}},
		{name: "logit_bias", params: map[string]string{"samplers": "top_k;temperature", "top_k": "10", "temp": "1"}, bias: []string{"3+5", "7-inf"}},
	}
	var voc *vocab.Vocab
	for ci, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(ci), 99))
			logits := make([]float32, steps*nv)
			raw := make([]byte, 0, 4*len(logits))
			for i := range logits {
				logits[i] = float32(r.NormFloat64() * 2.5)
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(logits[i]))
			}
			file := filepath.Join(t.TempDir(), "logits.f32")
			require.NoError(t, os.WriteFile(file, raw, 0o644))

			p := sampling.DefaultParams()
			p.Seed, p.NVocab = seed, nv
			args := []string{"generate", "--logits", file, "--n-vocab", strconv.Itoa(nv), "--seed", strconv.Itoa(seed)}
			var ids []string
			for _, id := range prompt {
				ids = append(ids, strconv.Itoa(id))
			}
			args = append(args, "--prompt-ids", strings.Join(ids, ","))
			for name, v := range tc.params {
				require.NoError(t, p.Set(name, v))
				spec, ok := sampling.LookupParam(name)
				require.True(t, ok)
				args = append(args, "--"+spec.Flag, v)
			}
			for _, b := range tc.bias {
				e, err := sampling.ParseLogitBias(b)
				require.NoError(t, err)
				p.LogitBias = append(p.LogitBias, e)
				args = append(args, "--logit-bias", b)
			}
			if tc.dry {
				if voc == nil {
					var err error
					voc, err = vocab.LoadFile(llama3)
					require.NoError(t, err)
				}
				p.DryVocab = voc
				args = append(args, "--tokenizer", llama3)
			}

			sess, _, err := sampling.NewSessionFromParams(p, nil)
			require.NoError(t, err)
			for _, id := range prompt {
				sess.Chain().Accept(id)
			}
			want := make([]int, 0, steps)
			for s := 0; s < steps; s++ {
				id, err := sess.Sample(logits[s*nv : (s+1)*nv])
				require.NoError(t, err)
				require.NoError(t, sess.Accept(id))
				want = append(want, id)
			}

			out, err := exec.Command(cli, args...).Output()
			if ee, ok := err.(*exec.ExitError); ok {
				t.Fatalf("tether %v: %v\n%s", args, err, ee.Stderr)
			}
			require.NoError(t, err)
			var got struct {
				IDs   []int  `json:"ids"`
				Chain string `json:"chain"`
			}
			require.NoError(t, json.Unmarshal(out, &got))
			assert.Equal(t, sess.Chain().String(), got.Chain)
			require.Len(t, got.IDs, steps)
			assert.Equal(t, want, got.IDs)
			distinct := map[int]bool{}
			for _, id := range want {
				distinct[id] = true
			}
			if tc.name != "greedy" {
				assert.Greater(t, len(distinct), 3, "degenerate picks")
			}
		})
	}
}
