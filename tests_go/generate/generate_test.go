package generate_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/generate"
	"github.com/tetherlm/tether/gocore/sampling"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// tinyModelDir writes a random 2-layer Llama (hidden 16) with the real Llama-2 tokenizer
// (32,000 tokens) into a new directory: config.json, model.safetensors (written by hand:
// header length, JSON header, f32 data), tokenizer.json and tokenizer_config.json.
func tinyModelDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	const H, I, L, V = 16, 32, 2, 32000
	cfg := map[string]any{"architectures": []string{"LlamaForCausalLM"}, "hidden_size": H, "intermediate_size": I,
		"num_hidden_layers": L, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": V,
		"max_position_embeddings": 512, "rms_norm_eps": 1e-5, "tie_word_embeddings": false,
		"bos_token_id": 1, "eos_token_id": 2}
	b, _ := json.Marshal(cfg)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644))
	r := rand.New(rand.NewPCG(11, 12))
	header := map[string]any{}
	var data []byte
	add := func(name string, mean, std float64, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		header[name] = map[string]any{"dtype": "F32", "shape": shape, "data_offsets": []int{len(data), len(data) + 4*n}}
		for i := 0; i < n; i++ {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(mean+std*r.NormFloat64())))
		}
	}
	add("model.embed_tokens.weight", 0, 0.5, V, H)
	for l := 0; l < L; l++ {
		p := "model.layers." + strconv.Itoa(l) + "."
		add(p+"input_layernorm.weight", 1, 0.1, H)
		add(p+"post_attention_layernorm.weight", 1, 0.1, H)
		add(p+"self_attn.q_proj.weight", 0, 0.3, H, H)
		add(p+"self_attn.k_proj.weight", 0, 0.3, H/2, H)
		add(p+"self_attn.v_proj.weight", 0, 0.3, H/2, H)
		add(p+"self_attn.o_proj.weight", 0, 0.3, H, H)
		add(p+"mlp.gate_proj.weight", 0, 0.3, I, H)
		add(p+"mlp.up_proj.weight", 0, 0.3, I, H)
		add(p+"mlp.down_proj.weight", 0, 0.3, H, I)
	}
	add("model.norm.weight", 1, 0.1, H)
	add("lm_head.weight", 0, 0.5, V, H)
	h, _ := json.Marshal(header)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(append(out, h...), data...)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), out, 0o644))
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), testdata.ReadTokenizerFile(t, "llama2", f), 0o644))
	}
	return dir
}

func greedy() *sampling.Params {
	p := sampling.DefaultParams()
	p.Temp, p.Greedy = 0, true
	return &p
}

func TestGenerateStreamsAndStops(t *testing.T) {
	g, err := generate.Load(tinyModelDir(t))
	require.NoError(t, err)
	defer g.Close()
	assert.Contains(t, g.Vocab().EOGTokens(), 2, "</s> from config.json / tokenizer_config.json")

	var streamed []byte
	var ids []int
	res, err := g.Generate(context.Background(), "Hello world", generate.Options{
		Sampling: greedy(), MaxTokens: 12, IgnoreEOG: true,
		OnToken: func(tk generate.Token) error {
			assert.Equal(t, len(ids), tk.Index)
			ids = append(ids, tk.ID)
			streamed = append(streamed, tk.Bytes...)
			return nil
		},
	})
	require.NoError(t, err)
	assert.Equal(t, generate.StopMaxTokens, res.Stop)
	assert.Equal(t, ids, res.IDs)
	assert.Len(t, res.IDs, 12)
	assert.Equal(t, streamed, res.Text)
	assert.Equal(t, 1, res.PromptIDs[0], "BOS first")
	assert.Equal(t, 11, res.DecodeSteps)
	assert.Greater(t, res.DecodeTokensPerSecond(), 0.0)
	assert.Greater(t, res.PrefillTokensPerSecond(), 0.0)

	// Greedy is deterministic, and the generator can be reused.
	again, err := g.Generate(context.Background(), "Hello world", generate.Options{Sampling: greedy(), MaxTokens: 12, IgnoreEOG: true})
	require.NoError(t, err)
	assert.Equal(t, res.IDs, again.IDs)

	// Seeded sampling is reproducible and differs from greedy.
	p := sampling.DefaultParams()
	p.Seed, p.Temp, p.TopK, p.TopP, p.MinP = 42, 1.5, 0, 1, 0
	s1, err := g.Generate(context.Background(), "Hello world", generate.Options{Sampling: &p, MaxTokens: 12, IgnoreEOG: true})
	require.NoError(t, err)
	p2 := p
	s2, err := g.Generate(context.Background(), "Hello world", generate.Options{Sampling: &p2, MaxTokens: 12, IgnoreEOG: true})
	require.NoError(t, err)
	assert.Equal(t, s1.IDs, s2.IDs)
	assert.NotEqual(t, res.IDs, s1.IDs)
}

func TestGenerateHonoursCancellation(t *testing.T) {
	g, err := generate.Load(tinyModelDir(t))
	require.NoError(t, err)
	defer g.Close()
	ctx, cancel := context.WithCancel(context.Background())
	res, err := g.Generate(ctx, "Once upon a time", generate.Options{
		Sampling: greedy(), MaxTokens: 100, IgnoreEOG: true,
		OnToken: func(tk generate.Token) error {
			if tk.Index == 2 {
				cancel()
			}
			return nil
		},
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Len(t, res.IDs, 3, "stops before the next forward pass")

	stop := errors.New("enough")
	_, err = g.Generate(context.Background(), "x", generate.Options{Sampling: greedy(), MaxTokens: 10, IgnoreEOG: true,
		OnToken: func(generate.Token) error { return stop }})
	require.ErrorIs(t, err, stop)
}

func TestGenerateConstrained(t *testing.T) {
	g, err := generate.Load(tinyModelDir(t))
	require.NoError(t, err)
	defer g.Close()
	p := sampling.DefaultParams()
	p.Seed, p.Temp = 7, 1.0

	res, err := g.Generate(context.Background(), "Code:", generate.Options{Sampling: &p, MaxTokens: 64,
		Constraint: generate.Constraint{Regex: `[0-9]{3}-[a-z]{2,4}`}})
	require.NoError(t, err)
	assert.Equal(t, generate.StopEOG, res.Stop, "the regex is complete, so only the end token remains")
	assert.Regexp(t, regexp.MustCompile(`^[0-9]{3}-[a-z]{2,4}$`), string(res.Text))

	schemaJSON := []byte(`{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":99},
		"ok":{"type":"boolean"}},"required":["n","ok"],"additionalProperties":false}`)
	res, err = g.Generate(context.Background(), "JSON:", generate.Options{Sampling: &p, MaxTokens: 200,
		Constraint: generate.Constraint{JSONSchema: schemaJSON}})
	require.NoError(t, err)
	require.Equal(t, generate.StopEOG, res.Stop, "text so far: %q", res.Text)
	var v struct {
		N  *int  `json:"n"`
		OK *bool `json:"ok"`
	}
	require.NoError(t, json.Unmarshal(res.Text, &v), "%q", res.Text)
	require.NotNil(t, v.N)
	require.NotNil(t, v.OK)
	assert.True(t, *v.N >= 0 && *v.N <= 99)

	res, err = g.Generate(context.Background(), "Say:", generate.Options{Sampling: &p, MaxTokens: 64,
		Constraint: generate.Constraint{GBNF: `root ::= "yes" | "no"`}})
	require.NoError(t, err)
	assert.Contains(t, []string{"yes", "no"}, string(res.Text))

	_, err = g.Generate(context.Background(), "x", generate.Options{
		Constraint: generate.Constraint{GBNF: `root ::= "a"`, Regex: "b"}})
	require.ErrorContains(t, err, "not several")
	_, err = g.Generate(context.Background(), "x", generate.Options{Constraint: generate.Constraint{GBNF: `root ::= "unterminated`}})
	require.ErrorContains(t, err, "grammar")
}

func TestLoadErrors(t *testing.T) {
	dir := tinyModelDir(t)
	require.NoError(t, os.Remove(filepath.Join(dir, "tokenizer.json")))
	_, err := generate.Load(dir)
	require.ErrorContains(t, err, "tokenizer.json")
}

// TestGreedyPicksTheArgmax: unconstrained greedy generation (which picks through
// Model.ForwardArgmax) gives the ids of a loop of Forward and a host argmax, with the
// end tokens excluded under IgnoreEOG: generation_config.json makes the first greedy
// token an end token, so the exclusion decides the first pick. A repeat penalty (not
// greedy in the argmax sense) takes the sampler chain, whose picks the penalty moves.
func TestGreedyPicksTheArgmax(t *testing.T) {
	dir := tinyModelDir(t)
	load := func() *generate.Generator {
		g, err := generate.Load(dir)
		require.NoError(t, err)
		t.Cleanup(func() { g.Close() })
		return g
	}
	g := load()
	prompt, err := g.Tokenizer().Encode("Hello world", true)
	require.NoError(t, err)
	ids := make([]int, len(prompt))
	for i, u := range prompt {
		ids[i] = int(u)
	}
	manual := func(n int, skip ...int) []int {
		m := g.Model()
		st := m.NewState()
		logits, err := m.Forward(st, ids)
		require.NoError(t, err)
		var out []int
		for len(out) < n {
			row, best := logits.Float32s(), -1
			for i, l := range row {
				if !slices.Contains(skip, i) && (best < 0 || l > row[best]) {
					best = i
				}
			}
			out = append(out, best)
			if logits, err = m.Forward(st, []int{best}); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	first := manual(1)[0]
	require.NoError(t, os.WriteFile(filepath.Join(dir, "generation_config.json"),
		[]byte(`{"eos_token_id": [2, `+strconv.Itoa(first)+`]}`), 0o644))
	g = load()
	require.ElementsMatch(t, []int{2, first}, g.Vocab().EOGTokens())
	want := manual(16, 2, first)
	require.NotEqual(t, first, want[0])

	res, err := g.GenerateIDs(context.Background(), ids, generate.Options{Sampling: greedy(), MaxTokens: 16, IgnoreEOG: true})
	require.NoError(t, err)
	require.Equal(t, want, res.IDs)
	res, err = g.GenerateIDs(context.Background(), ids, generate.Options{Sampling: greedy(), MaxTokens: 16})
	require.NoError(t, err)
	require.Equal(t, []int{first}, res.IDs, "without IgnoreEOG the end token is picked and stops")
	require.Equal(t, generate.StopEOG, res.Stop)

	p := greedy()
	p.Greedy = false
	res, err = g.GenerateIDs(context.Background(), ids, generate.Options{Sampling: p, MaxTokens: 16, IgnoreEOG: true})
	require.NoError(t, err)
	require.Equal(t, want, res.IDs, "temp 0 with dist at the end is greedy too")

	p.PenaltyLastN, p.PenaltyRepeat = 64, 100
	res, err = g.GenerateIDs(context.Background(), ids, generate.Options{Sampling: p, MaxTokens: 16, IgnoreEOG: true})
	require.NoError(t, err)
	require.NotEqual(t, want, res.IDs)
}
