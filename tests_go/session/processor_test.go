package session_test

import (
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/session"
)

const width = 256 + 2 + 3 // the byte vocabulary plus 3 padding columns

func newProcessor(t *testing.T, spec session.Spec) *session.Processor {
	t.Helper()
	g, err := session.Compile(voc, spec)
	require.NoError(t, err)
	return session.NewProcessor(g)
}

// allowedBytesF are the bytes whose scores stayed finite.
func allowedBytesF(row []float32) string {
	var s []byte
	for b := 0; b < 256; b++ {
		if !math.IsInf(float64(row[voc.ByteToken(byte(b))]), -1) {
			s = append(s, byte(b))
		}
	}
	return string(s)
}

func applyStep(p *session.Processor, key int64, mode session.StepMode, prompt []int64, gen string) (string, error) {
	ids := append(append([]int64{}, prompt...), toks(gen)...)
	in := make([]float32, width)
	out := make([]float32, width)
	err := session.Apply(p, session.Step{Key: key, Mode: mode, IDs: ids, Batch: 1, SeqLen: len(ids)}, in, out, width, session.NegInf32)
	return allowedBytesF(out), err
}

func TestProcessorKeysSeparateConcurrentCalls(t *testing.T) {
	// Eight goroutines share one processor, each its own generate call over its own
	// text, in lock step; each sees exactly the masks of a call run alone.
	p := newProcessor(t, session.Spec{Src: `root ::= "{" [a-z]+ "}"`})
	texts := []string{"{abc}", "{zz}", "{q}", "{hello}", "{ab}", "{xyzzy}", "{m}", "{go}"}
	want := make([][]string, len(texts))
	for i, text := range texts {
		for n := 0; n < len(text); n++ {
			mode := session.CallStep
			if n == 0 {
				mode = session.CallBegin
			}
			got, err := applyStep(p, 1000+int64(i), mode, []int64{0}, text[:n])
			require.NoError(t, err)
			want[i] = append(want[i], got)
		}
		assert.True(t, p.End(1000+int64(i)))
	}
	for round := 0; round < 20; round++ {
		var wg sync.WaitGroup
		errs := make([]error, len(texts))
		for i, text := range texts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := int64(round*100 + i)
				for n := 0; n < len(text); n++ {
					mode := session.CallStep
					if n == 0 {
						mode = session.CallBegin
					}
					got, err := applyStep(p, key, mode, []int64{0}, text[:n])
					if err == nil && got != want[i][n] {
						err = fmt.Errorf("call %d step %d: allowed %q, want %q", i, n, got, want[i][n])
					}
					if err != nil {
						errs[i] = err
						return
					}
				}
				p.End(key)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
	}
	assert.Zero(t, p.Calls(), "ended calls are dropped")
	assert.Zero(t, p.Rejected())
}

func TestProcessorCallModes(t *testing.T) {
	p := newProcessor(t, session.Spec{Src: `root ::= "ab" | "ok"`})
	prompt := toks("Answer:")
	_, err := applyStep(p, 7, session.CallStep, prompt, "")
	assert.ErrorContains(t, err, "no generate call under key 7")

	got, err := applyStep(p, 7, session.CallBegin, prompt, "")
	require.NoError(t, err)
	assert.Equal(t, "ao", got)
	got, err = applyStep(p, 7, session.CallStep, prompt, "a")
	require.NoError(t, err)
	assert.Equal(t, "b", got)
	// A new call whose prompt extends the old one starts over: it has its own key.
	got, err = applyStep(p, 8, session.CallBegin, append(append([]int64{}, prompt...), tok('a')), "")
	require.NoError(t, err)
	assert.Equal(t, "ao", got)
	// Within a call, an input that does not extend the call's prompt starts over.
	got, err = applyStep(p, 7, session.CallStep, toks("Other:"), "a")
	require.NoError(t, err)
	assert.Equal(t, "ao", got)
	_, err = applyStep(p, 7, session.FreeStep, prompt, "")
	require.NoError(t, err, "a free step under a call's key replaces it with a free stream")
	_, err = applyStep(p, 7, session.CallStep, prompt, "a")
	assert.ErrorContains(t, err, "names a free stream")

	p.Reset()
	assert.Zero(t, p.Calls())
	_, err = applyStep(p, 8, session.CallStep, prompt, "")
	assert.ErrorContains(t, err, "no generate call under key 8")
}

func TestProcessorAfterMarkerInPrompt(t *testing.T) {
	spec := session.Spec{Src: `root ::= "ok"`, Triggers: &engine.Triggers{After: "</think>"}}
	p := newProcessor(t, spec)
	all := allowedBytesF(make([]float32, width))
	for _, tc := range []struct {
		prompt string
		want   string
	}{
		{"<think>\n\n</think>\n\n", "o"},          // Qwen3, enable_thinking=False
		{"user: hi</think>\nassistant:", "o"},     // the last marker is not reopened
		{"<think>a</think> then <think>", all},    // a new thinking block is open
		{"no marker here", all},                   // awaiting the marker
		{"</think><think>x</think></thi", all[:]}, // ... and a partial marker is not one
	} {
		got, err := applyStep(p, 1, session.FreeStep, toks(tc.prompt), "")
		require.NoError(t, err, tc.prompt)
		if tc.prompt == "</think><think>x</think></thi" {
			assert.Equal(t, "o", got, "the last complete marker counts")
			continue
		}
		assert.Equal(t, tc.want, got, tc.prompt)
	}
	// Generated text still wakes the grammar when the prompt did not.
	for _, gen := range []string{"", "h", "hm", "hm<", "hm</think>"} {
		got, err := applyStep(p, 2, session.FreeStep, toks("q:"), gen)
		require.NoError(t, err)
		if gen == "hm</think>" {
			assert.Equal(t, "o", got)
		} else {
			assert.Equal(t, all, got)
		}
	}
}

func TestProcessorChecksExtents(t *testing.T) {
	p := newProcessor(t, session.Spec{Src: `root ::= "a"`})
	ids := []int64{0}
	st := session.Step{Key: 1, IDs: ids, Batch: 1, SeqLen: 1}
	in := make([]float32, width)
	assert.ErrorContains(t, session.Apply(p, st, in[:100], in[:100], 100, session.NegInf32), "fewer than the 258 token ids")
	assert.ErrorContains(t, session.Apply(p, st, in, in[:width-1], width, session.NegInf32), "want 1 rows")
	st.Batch = 2
	assert.ErrorContains(t, session.Apply(p, st, in, in, width, session.NegInf32), "want 2 rows")
	in2 := make([]float32, 2*width)
	assert.ErrorContains(t, session.Apply(p, st, in2, in2, width, session.NegInf32), "input_ids: 1 values for shape [2, 1]")
	st.Batch = 1
	assert.ErrorContains(t, p.FillMasks(st, make([]uint32, 3), width), "want 1 rows × 9 words")
	assert.True(t, allFinite(in), "nothing was written")
}

func TestProcessorDeadEndWritesNothing(t *testing.T) {
	// No end-of-generation token in the vocabulary: once "a" is generated nothing is left.
	g, err := session.Compile(engine.ByteVocabulary{Specials: 2}, session.Spec{Src: `root ::= "a"`})
	require.NoError(t, err)
	p := session.NewProcessor(g)
	in := make([]float32, width)
	require.NoError(t, session.Apply(p, session.Step{Key: 1, IDs: []int64{0}, Batch: 1, SeqLen: 1}, in, make([]float32, width), width, session.NegInf32))
	ids := []int64{0, tok('a')}
	err = session.Apply(p, session.Step{Key: 1, IDs: ids, Batch: 1, SeqLen: 2}, in, in, width, session.NegInf32)
	var de *session.DeadEndError
	require.ErrorAs(t, err, &de)
	assert.True(t, allFinite(in), "no all -inf row is returned")
}

func allFinite(xs []float32) bool {
	for _, x := range xs {
		if math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}
