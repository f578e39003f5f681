package model_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/model"
	"github.com/tetherlm/tether/tests_go/internal/tinymodel"
)

// parse parses a config.json made of a small common body plus the given fields.
func parse(t *testing.T, fields string) (*model.Config, error) {
	t.Helper()
	body := `"hidden_size":64,"intermediate_size":128,"num_hidden_layers":6,"num_attention_heads":4,` +
		`"num_key_value_heads":2,"vocab_size":100,"max_position_embeddings":128`
	if fields != "" {
		body += "," + fields
	}
	return model.ParseConfig([]byte("{"+body+"}"), "config.json")
}

func mustParse(t *testing.T, fields string) *model.Config {
	t.Helper()
	c, err := parse(t, fields)
	require.NoError(t, err)
	return c
}

func types(spec string) []string {
	out := make([]string, len(spec))
	for i, ch := range spec {
		out[i] = map[rune]string{'f': model.FullAttention, 's': model.SlidingAttention}[ch]
	}
	return out
}

func TestParseConfigQwen3(t *testing.T) {
	c := mustParse(t, `"model_type":"qwen3"`)
	assert.Equal(t, "Qwen3ForCausalLM", c.Architecture)
	assert.Equal(t, 128, c.HeadDim, "Qwen3Config's head_dim default, not hidden/heads")
	assert.Equal(t, 128, c.RotaryDim)
	assert.True(t, c.QKNorm)
	assert.False(t, c.QKVBias || c.OBias || c.MLPBias || c.NormPlusOne || c.SandwichNorms || c.EmbedScale)
	assert.Equal(t, model.SiLU, c.Activation)
	assert.Equal(t, 0, c.SlidingWindow)
	assert.Equal(t, types("ffffff"), c.LayerTypes)
	assert.Equal(t, 0, c.Window(5))

	c = mustParse(t, `"architectures":["Qwen3ForCausalLM"],"head_dim":16,"attention_bias":true,"sliding_window":8`)
	assert.Equal(t, 16, c.HeadDim)
	assert.True(t, c.QKVBias && c.OBias)
	assert.Equal(t, 0, c.SlidingWindow, "sliding_window without use_sliding_window is off, as in transformers")

	// use_sliding_window: layers from max_window_layers on slide (transformers' derivation)
	c = mustParse(t, `"model_type":"qwen3","use_sliding_window":true,"sliding_window":8,"max_window_layers":4`)
	assert.Equal(t, 8, c.SlidingWindow)
	assert.Equal(t, types("ffffss"), c.LayerTypes)
	assert.Equal(t, 0, c.Window(3))
	assert.Equal(t, 8, c.Window(4))
	// and Qwen2 too, with layer_types given (transformers 5 writes them)
	c = mustParse(t, `"model_type":"qwen2","use_sliding_window":true,"sliding_window":8,`+
		`"layer_types":["sliding_attention","full_attention","full_attention","full_attention","full_attention","full_attention"]`)
	assert.Equal(t, types("sfffff"), c.LayerTypes)
	assert.True(t, c.QKVBias)
}

func TestParseConfigMistral(t *testing.T) {
	c := mustParse(t, `"architectures":["MistralForCausalLM"]`)
	assert.Equal(t, 4096, c.SlidingWindow, "MistralConfig's default when the key is absent")
	assert.Equal(t, types("ssssss"), c.LayerTypes)
	assert.Equal(t, 16, c.HeadDim)
	assert.False(t, c.QKVBias || c.OBias || c.QKNorm)

	c = mustParse(t, `"architectures":["MistralForCausalLM"],"sliding_window":null,"head_dim":32`)
	assert.Equal(t, 0, c.SlidingWindow, "null: no window")
	assert.Equal(t, types("ffffff"), c.LayerTypes)
	assert.Equal(t, 32, c.HeadDim)

	c = mustParse(t, `"architectures":["MistralForCausalLM"],"sliding_window":8`)
	assert.Equal(t, 8, c.Window(0))
}

func TestParseConfigPhi3(t *testing.T) {
	c := mustParse(t, `"architectures":["Phi3ForCausalLM"]`)
	assert.True(t, c.FusedQKV && c.FusedGateUp)
	assert.Equal(t, 1e-5, c.RMSNormEps, "Phi3Config's rms_norm_eps default")
	assert.Equal(t, 16, c.RotaryDim)
	assert.Equal(t, 0, c.SlidingWindow, "Phi3Config's sliding_window default is null")
	assert.Nil(t, c.RopeScaling)

	c = mustParse(t, `"architectures":["Phi3ForCausalLM"],"partial_rotary_factor":0.5,"sliding_window":2047`)
	assert.Equal(t, 8, c.RotaryDim)
	assert.Equal(t, 2047, c.Window(0))
	c = mustParse(t, `"architectures":["Phi3ForCausalLM"],"rope_parameters":{"rope_type":"default","rope_theta":250000,"partial_rotary_factor":0.75}`)
	assert.Equal(t, 12, c.RotaryDim)
	assert.Equal(t, 250000.0, c.RopeTheta)

	// transformers 4 "su" (Phi-3 128k) with the top-level original_max_position_embeddings:
	// factor = 128/32, attention factor √(1 + ln 4 / ln 32)
	short, long := "[1,1,1,1,1,1,1,1]", "[1,2,3,4,5,6,7,8]"
	for _, raw := range []string{
		`"rope_scaling":{"type":"su","short_factor":` + short + `,"long_factor":` + long + `},"original_max_position_embeddings":32`,
		`"rope_parameters":{"rope_type":"longrope","rope_theta":10000,"short_factor":` + short + `,"long_factor":` + long + `,"original_max_position_embeddings":32}`,
	} {
		c = mustParse(t, `"architectures":["Phi3ForCausalLM"],`+raw)
		require.NotNil(t, c.RopeScaling, raw)
		s := c.RopeScaling
		assert.Equal(t, "longrope", s.Type)
		assert.Equal(t, 32, s.OriginalMaxPositions)
		assert.Equal(t, 4.0, s.Factor)
		assert.InDelta(t, math.Sqrt(1+math.Log(4)/math.Log(32)), s.AttentionFactor, 1e-12)
		assert.Equal(t, []float64{1, 2, 3, 4, 5, 6, 7, 8}, s.LongFactor)
	}
	c = mustParse(t, `"architectures":["Phi3ForCausalLM"],"rope_scaling":{"type":"longrope","short_factor":`+short+
		`,"long_factor":`+long+`,"original_max_position_embeddings":64,"attention_factor":1.25}`)
	assert.Equal(t, 1.25, c.RopeScaling.AttentionFactor)
	assert.Equal(t, 2.0, c.RopeScaling.Factor)
}

func TestParseConfigGemma3(t *testing.T) {
	c := mustParse(t, `"model_type":"gemma3_text"`)
	assert.Equal(t, "Gemma3ForCausalLM", c.Architecture)
	assert.Equal(t, 256, c.HeadDim, "Gemma3TextConfig's head_dim default")
	assert.Equal(t, model.GELUTanh, c.Activation)
	assert.True(t, c.TieEmbeddings, "Gemma3 ties by default")
	assert.True(t, c.QKNorm && c.NormPlusOne && c.SandwichNorms && c.EmbedScale)
	assert.False(t, c.QKVBias || c.OBias)
	assert.InDelta(t, 1.0/16, c.AttnScale, 1e-15, "query_pre_attn_scalar 256")
	assert.Equal(t, 4096, c.SlidingWindow)
	assert.Equal(t, types("sssssf"), c.LayerTypes, "sliding_window_pattern 6")
	assert.Equal(t, 1e6, c.RopeTheta)
	assert.Equal(t, 1e4, c.LocalRopeTheta)
	assert.Nil(t, c.RopeScaling)
	assert.Equal(t, 0.0, c.FinalLogitSoftcap)
	assert.Equal(t, 1e-6, c.RMSNormEps)

	// transformers 4 spelling (the Hub's Gemma 3 configs)
	c = mustParse(t, `"architectures":["Gemma3ForCausalLM"],"head_dim":16,"query_pre_attn_scalar":64,`+
		`"sliding_window":512,"sliding_window_pattern":2,"rope_theta":500000,"rope_local_base_freq":20000,`+
		`"rope_scaling":{"rope_type":"linear","factor":8},"final_logit_softcapping":30,"attn_logit_softcapping":50,`+
		`"hidden_activation":"gelu_pytorch_tanh","hidden_act":"silu","tie_word_embeddings":false`)
	assert.Equal(t, model.GELUTanh, c.Activation, "Gemma3 reads hidden_activation, not hidden_act")
	assert.InDelta(t, 0.125, c.AttnScale, 1e-15)
	assert.Equal(t, types("sfsfsf"), c.LayerTypes)
	assert.Equal(t, 512, c.Window(0))
	assert.Equal(t, 0, c.Window(1))
	assert.Equal(t, 500000.0, c.RopeTheta)
	assert.Equal(t, 20000.0, c.LocalRopeTheta)
	assert.Equal(t, &model.RopeScaling{Type: "linear", Factor: 8}, c.RopeScaling)
	assert.Equal(t, 30.0, c.FinalLogitSoftcap)
	assert.False(t, c.TieEmbeddings)

	// transformers 5 spelling: rope_parameters per layer type, layer_types written out
	c = mustParse(t, `"model_type":"gemma3_text","sliding_window":8,`+
		`"layer_types":["full_attention","sliding_attention","full_attention","sliding_attention","sliding_attention","full_attention"],`+
		`"rope_parameters":{"full_attention":{"rope_type":"linear","factor":2,"rope_theta":1000000},"sliding_attention":{"rope_type":"default","rope_theta":30000}}`)
	assert.Equal(t, types("fsfssf"), c.LayerTypes)
	assert.Equal(t, 1e6, c.RopeTheta)
	assert.Equal(t, 30000.0, c.LocalRopeTheta)
	assert.Equal(t, &model.RopeScaling{Type: "linear", Factor: 2}, c.RopeScaling)
}

// Configs shaped as the Hub's (transformers 4.5x spellings, nulls included).
func TestParseConfigHubShapes(t *testing.T) {
	gemma := `{"architectures":["Gemma3ForCausalLM"],"attention_bias":false,"attention_dropout":0.0,
		"attn_logit_softcapping":null,"bos_token_id":2,"cache_implementation":"hybrid","eos_token_id":[1,106],
		"final_logit_softcapping":null,"head_dim":256,"hidden_activation":"gelu_pytorch_tanh","hidden_size":1152,
		"initializer_range":0.02,"intermediate_size":6912,"max_position_embeddings":32768,"model_type":"gemma3_text",
		"num_attention_heads":4,"num_hidden_layers":26,"num_key_value_heads":1,"pad_token_id":0,
		"query_pre_attn_scalar":256,"rms_norm_eps":1e-06,"rope_local_base_freq":10000,"rope_scaling":null,
		"rope_theta":1000000,"sliding_window":512,"sliding_window_pattern":6,"torch_dtype":"bfloat16",
		"use_cache":true,"vocab_size":262144}`
	c, err := model.ParseConfig([]byte(gemma), "config.json")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 106}, c.EOSTokenIDs)
	assert.Equal(t, 512, c.SlidingWindow)
	assert.Equal(t, model.FullAttention, c.LayerTypes[5])
	assert.Equal(t, model.SlidingAttention, c.LayerTypes[6])
	assert.Equal(t, model.FullAttention, c.LayerTypes[23])
	assert.Nil(t, c.RopeScaling)
	assert.Equal(t, 0.0, c.FinalLogitSoftcap)
	assert.True(t, c.TieEmbeddings)

	phi := `{"architectures":["Phi3ForCausalLM"],"hidden_size":3072,"intermediate_size":8192,"num_hidden_layers":32,
		"num_attention_heads":32,"num_key_value_heads":32,"vocab_size":32064,"max_position_embeddings":131072,
		"original_max_position_embeddings":4096,"rms_norm_eps":1e-05,"rope_theta":10000.0,"sliding_window":262144,
		"hidden_act":"silu","tie_word_embeddings":false,"rope_scaling":{"type":"longrope",
		"short_factor":` + floatList(48, 1.05) + `,"long_factor":` + floatList(48, 5.5) + `}}`
	c, err = model.ParseConfig([]byte(phi), "config.json")
	require.NoError(t, err)
	require.NotNil(t, c.RopeScaling)
	assert.Equal(t, 32.0, c.RopeScaling.Factor)
	assert.InDelta(t, 1.1902380714238083, c.RopeScaling.AttentionFactor, 1e-12)
	assert.Equal(t, 96, c.RotaryDim)

	qwen := `{"architectures":["Qwen3ForCausalLM"],"attention_bias":false,"head_dim":128,"hidden_act":"silu",
		"hidden_size":1024,"intermediate_size":3072,"max_position_embeddings":40960,"max_window_layers":28,
		"num_attention_heads":16,"num_hidden_layers":28,"num_key_value_heads":8,"rms_norm_eps":1e-06,
		"rope_scaling":null,"rope_theta":1000000,"sliding_window":null,"tie_word_embeddings":true,
		"use_sliding_window":false,"vocab_size":151936}`
	c, err = model.ParseConfig([]byte(qwen), "config.json")
	require.NoError(t, err)
	assert.Equal(t, 0, c.SlidingWindow)
	assert.True(t, c.QKNorm && c.TieEmbeddings)
}

func floatList(n int, v float64) string {
	b, _ := json.Marshal(slicesRepeat(v, n))
	return string(b)
}

func slicesRepeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, fields string
		want         []string
	}{
		{"unknown architecture lists the supported", `"architectures":["Gemma2ForCausalLM"]`,
			[]string{`"Gemma2ForCausalLM"`, "Qwen3ForCausalLM", "MistralForCausalLM", "Phi3ForCausalLM", "Gemma3ForCausalLM"}},
		{"multimodal gemma", `"architectures":["Gemma3ForConditionalGeneration"]`,
			[]string{`"Gemma3ForConditionalGeneration"`, "multimodal", "Gemma3ForCausalLM (model_type gemma3_text)"}},
		{"unknown rope type", `"model_type":"mistral","rope_scaling":{"rope_type":"yarn","factor":4}`,
			[]string{"rope_scaling", `rope type "yarn" is not supported`}},
		{"unknown rope type, phi3", `"model_type":"phi3","rope_scaling":{"rope_type":"dynamic","factor":4}`,
			[]string{`"dynamic"`, "longrope"}},
		{"longrope outside phi3", `"model_type":"llama","rope_scaling":{"rope_type":"longrope","short_factor":[1],"long_factor":[1]}`,
			[]string{"longrope", "Phi3ForCausalLM only"}},
		{"longrope factor count", `"model_type":"phi3","rope_scaling":{"type":"su","short_factor":[1,1],"long_factor":[1,1]}`,
			[]string{"rope_scaling", "need 8 entries", "got 2 and 2"}},
		{"partial rotary outside phi3", `"model_type":"llama","partial_rotary_factor":0.5`,
			[]string{"partial_rotary_factor", "Phi3ForCausalLM only"}},
		{"partial rotary out of range", `"model_type":"phi3","partial_rotary_factor":1.5`,
			[]string{"partial_rotary_factor", "(0, 1]"}},
		{"odd rotary dimension", `"model_type":"phi3","head_dim":10,"partial_rotary_factor":0.5`,
			[]string{"head_dim", "got 5"}},
		{"gemma activation", `"model_type":"gemma3_text","hidden_activation":"gelu"`,
			[]string{"hidden_activation", `"gelu"`}},
		{"activation", `"model_type":"qwen3","hidden_act":"relu"`, []string{"hidden_act", `"relu"`}},
		{"bad layer type", `"model_type":"gemma3_text","layer_types":["sliding_attention","chunked_attention","full_attention","full_attention","full_attention","full_attention"]`,
			[]string{"layer_types", "layer 1", `"chunked_attention"`}},
		{"layer types count", `"model_type":"gemma3_text","layer_types":["full_attention"]`,
			[]string{"layer_types", "1 entries for 6 layers"}},
		{"sliding layers without a window", `"model_type":"gemma3_text","sliding_window":null`,
			[]string{"sliding_window", "need a positive"}},
		{"bad window", `"model_type":"mistral","sliding_window":0`, []string{"sliding_window", "positive integer or null"}},
		{"bidirectional", `"model_type":"gemma3_text","use_bidirectional_attention":true`,
			[]string{"use_bidirectional_attention"}},
		{"sliding rope scaling", `"model_type":"gemma3_text","rope_parameters":{"full_attention":{"rope_type":"default"},"sliding_attention":{"rope_type":"linear","factor":2}}`,
			[]string{"rope_parameters.sliding_attention", `"linear"`}},
		{"per-type rope outside gemma", `"model_type":"llama","rope_parameters":{"full_attention":{"rope_type":"default"}}`,
			[]string{"rope_parameters", "Gemma3ForCausalLM only"}},
		{"query_pre_attn_scalar", `"model_type":"gemma3_text","query_pre_attn_scalar":0`, []string{"query_pre_attn_scalar"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, tc.fields)
			require.Error(t, err)
			assert.Nil(t, c)
			assert.Contains(t, err.Error(), "config.json")
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestGELUTanhMulHandComputed(t *testing.T) {
	// PyTorch: gelu(tensor([1., -1., 3.]), approximate="tanh") = [0.8411920, -0.1588080, 2.9963627]
	g := []float32{1, -1, 3, 0}
	model.GELUTanhMul(g, []float32{1, 2, -1, 5})
	assert.InDeltaSlice(t, []float64{0.8411920, 2 * -0.1588080, -2.9963627, 0}, f64(g), 1e-6)
}

func TestRoPELongropeHandComputed(t *testing.T) {
	// rotary dim 4, theta 10000: base^(2i/4) = [1, 100]; short factors [2, 4] give
	// inv_freq [1/2, 1/400], long factors [3, 5] give [1/3, 1/500]; cos and sin are
	// multiplied by the attention factor 1.5. Sequences of up to 8 positions use short.
	r, err := model.NewRoPE(4, 10000, &model.RopeScaling{Type: "longrope", ShortFactor: []float64{2, 4},
		LongFactor: []float64{3, 5}, OriginalMaxPositions: 8, AttentionFactor: 1.5})
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{0.5, 1.0 / 400}, f64(r.InvFreq()), 1e-9)
	cos, sin := make([]float32, 2), make([]float32, 2)
	r.CosSinAt(6, 8, cos, sin)
	assert.InDeltaSlice(t, []float64{1.5 * math.Cos(3), 1.5 * math.Cos(6.0/400)}, f64(cos), 1e-6)
	assert.InDeltaSlice(t, []float64{1.5 * math.Sin(3), 1.5 * math.Sin(6.0/400)}, f64(sin), 1e-6)
	r.CosSinAt(6, 9, cos, sin) // the call's sequence exceeds 8: long factors
	assert.InDeltaSlice(t, []float64{1.5 * math.Cos(2), 1.5 * math.Cos(6.0/500)}, f64(cos), 1e-6)
	assert.InDeltaSlice(t, []float64{1.5 * math.Sin(2), 1.5 * math.Sin(6.0/500)}, f64(sin), 1e-6)
	_, err = model.NewRoPE(4, 10000, &model.RopeScaling{Type: "longrope", ShortFactor: []float64{1}, LongFactor: []float64{1}})
	require.ErrorContains(t, err, "longrope needs 2 short and long factors")
}

// naiveRMSNorm returns RMSNorm(x)·g in float64.
func naiveRMSNorm(x, g []float32, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v) * inv * float64(g[i])
	}
	return out
}

func TestCPUNewOpsMatchNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 4))
	const eps = 1e-5
	for _, n := range []int{1, 7} {
		const hd, heads, cols, rows = 8, 3, 24, 20
		x := randSlice(r, n*cols)
		gHead := randSlice(r, hd)
		w := randSlice(r, rows*cols)
		b := randSlice(r, rows)
		gOut := randSlice(r, rows)
		res := randSlice(r, n*rows)
		gate, up := randSlice(r, rows*cols), randSlice(r, rows*cols)
		gNorm := randSlice(r, cols)

		// HeadRMSNorm: each head of hd values on its own
		wantHead := make([]float64, 0, n*cols)
		for h := 0; h < n*heads; h++ {
			wantHead = append(wantHead, naiveRMSNorm(x[h*hd:(h+1)*hd], gHead, eps)...)
		}
		// ResidualNorm: res + RMSNorm(x·wᵀ + b)·gOut
		prod := naiveProduct(x, w, n, rows, cols)
		wantRes := make([]float64, n*rows)
		for t0 := 0; t0 < n; t0++ {
			p := make([]float32, rows)
			for o := range p {
				p[o] = float32(prod[t0*rows+o] + float64(b[o]))
			}
			nr := naiveRMSNorm(p, gOut, eps)
			for o := range p {
				wantRes[t0*rows+o] = float64(res[t0*rows+o]) + nr[o]
			}
		}
		// NormGLU with GELUTanh: gelu(h·gateᵀ)·(h·upᵀ), h = RMSNorm(x)·gNorm
		h := make([]float32, 0, n*cols)
		for t0 := 0; t0 < n; t0++ {
			for _, v := range naiveRMSNorm(x[t0*cols:(t0+1)*cols], gNorm, eps) {
				h = append(h, float32(v))
			}
		}
		pg, pu := naiveProduct(h, gate, n, rows, cols), naiveProduct(h, up, n, rows, cols)
		wantGLU := make([]float64, n*rows)
		for i := range wantGLU {
			g := pg[i]
			wantGLU[i] = 0.5 * g * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(g+0.044715*g*g*g))) * pu[i]
		}

		for name, e := range engines(2) {
			up16 := func(name string, rows, cols int, v []float32) model.Weight {
				wt, err := e.Upload(name, dense(rows, cols, v))
				require.NoError(t, err)
				return wt
			}
			xd := dense(n, cols, append([]float32(nil), x...))
			require.NoError(t, e.HeadRMSNorm(xd, up16("qn", 1, hd, gHead), eps))
			assert.InDeltaSlice(t, wantHead, f64(xd.Float32s()), 1e-5, "head rmsnorm n=%d %s", n, name)

			rd := dense(n, rows, append([]float32(nil), res...))
			require.NoError(t, e.ResidualNorm(rd, dense(n, cols, x), model.Linear{W: up16("w", rows, cols, w), B: up16("b", 1, rows, b)},
				up16("g", 1, rows, gOut), eps))
			assert.InDeltaSlice(t, wantRes, f64(rd.Float32s()), 1e-4, "residual norm n=%d %s", n, name)

			gd := dense(n, rows, make([]float32, n*rows))
			require.NoError(t, e.NormGLU(gd, dense(n, cols, x), up16("gn", 1, cols, gNorm), eps,
				model.Linear{W: up16("gate", rows, cols, gate)}, model.Linear{W: up16("up", rows, cols, up)}, model.GELUTanh))
			assert.InDeltaSlice(t, wantGLU, f64(gd.Float32s()), 1e-4, "geglu n=%d %s", n, name)

			// errors, not panics
			require.ErrorContains(t, e.HeadRMSNorm(dense(n, 20, make([]float32, n*20)), up16("qn", 1, hd, gHead), eps),
				"not rows of heads of 8")
			require.ErrorContains(t, e.ResidualNorm(dense(n, rows, make([]float32, n*rows)), dense(n, cols, x),
				model.Linear{W: up16("w", rows, cols, w)}, up16("g", 1, cols, gNorm), eps), "want a vector of 20")
			require.ErrorContains(t, e.NormGLU(gd, dense(n, cols, x), up16("gn", 1, cols, gNorm), eps,
				model.Linear{W: up16("gate", rows, cols, gate)}, model.Linear{W: up16("up", rows, cols, up)}, model.Activation(7)),
				"unknown activation")
		}
	}
}

func TestCPURoPEPartial(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	rope, err := model.NewRoPE(4, 10000, nil) // rotary dimension 4 of heads of 10
	require.NoError(t, err)
	const n, hd, cols = 3, 10, 30
	x := randSlice(r, n*cols)
	cos, sin := make([]float32, n*2), make([]float32, n*2)
	want := append([]float32(nil), x...)
	for t0 := 0; t0 < n; t0++ {
		rope.CosSin(5+t0, cos[t0*2:(t0+1)*2], sin[t0*2:(t0+1)*2])
		for h := 0; h < cols/hd; h++ {
			rope.Apply(want[t0*cols+h*hd:t0*cols+h*hd+4], 5+t0)
		}
	}
	for name, e := range engines(1) {
		xd := dense(n, cols, append([]float32(nil), x...))
		require.NoError(t, e.RoPE(xd, hd, 4, cos, sin))
		assert.Equal(t, want, xd.Float32s(), name)
		require.ErrorContains(t, e.RoPE(xd, hd, 12, cos, sin), "rotary dimension 12 for heads of 10")
		require.ErrorContains(t, e.RoPE(xd, hd, 3, cos, sin), "rotary dimension 3")
	}
}

func TestCPUAttentionWindowAndScale(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 77))
	const heads, kvHeads, hd, total = 4, 2, 16, 13
	qDim, kvDim := heads*hd, kvHeads*hd
	q, k, v := randSlice(r, total*qDim), randSlice(r, total*kvDim), randSlice(r, total*kvDim)
	for _, opt := range []model.AttentionOptions{{Window: 4}, {Window: 1}, {Scale: 0.3}, {Window: 3, Scale: 0.05}, {Window: 100}} {
		want := naiveAttention(q, k, v, heads, kvHeads, hd, total, opt)
		for name, e := range engines(2) {
			kv, err := e.NewKV(1, kvHeads, hd, 0)
			require.NoError(t, err)
			// a 6-position prefill (longer than the window), then one at a time
			got := attentionAlong(t, e, kv, 0, q, k, v, qDim, kvDim, total, 6, opt)
			assert.InDeltaSlice(t, want, got, 1e-5, "%s %+v", name, opt)
		}
	}
	e := model.NewCPU(1)
	kv, _ := e.NewKV(1, kvHeads, hd, 0)
	err := e.Attention(dense(1, qDim, make([]float32, qDim)), dense(1, qDim, q[:qDim]), dense(1, kvDim, k[:kvDim]),
		dense(1, kvDim, v[:kvDim]), kv, 0, 0, model.AttentionOptions{Window: -1})
	require.ErrorContains(t, err, "window -1")
}

func TestCPURowsScale(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const rows, cols = 20, 6
	w := randSlice(r, rows*cols)
	for name, e := range engines(1) {
		for _, dtype := range []string{"f32", "bf16"} {
			wt, wide := upload(t, e, dtype, rows, cols, w)
			dst := dense(2, cols, make([]float32, 2*cols))
			require.NoError(t, e.Rows(dst, wt, []int{17, 3}, 9.8125))
			want := make([]float32, 0, 2*cols)
			for _, id := range []int{17, 3} {
				for _, v := range wide[id*cols : (id+1)*cols] {
					want = append(want, v*9.8125)
				}
			}
			assert.Equal(t, want, dst.Float32s(), "%s %s", name, dtype)
		}
	}
}

// archModel is a tiny model of one of the newer architectures, written by hand.
type archModel struct {
	arch                                                  string
	hidden, inter, layers, heads, kvHeads, headDim, vocab int
	config                                                map[string]any
}

func (a archModel) configJSON() map[string]any {
	m := map[string]any{
		"architectures": []string{a.arch}, "hidden_size": a.hidden, "intermediate_size": a.inter,
		"num_hidden_layers": a.layers, "num_attention_heads": a.heads, "num_key_value_heads": a.kvHeads,
		"head_dim": a.headDim, "vocab_size": a.vocab, "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
	}
	for k, v := range a.config {
		m[k] = v
	}
	return m
}

// tensors returns random f32 weights named and shaped as the architecture's checkpoints.
func (a archModel) tensors(seed uint64) []stTensor {
	return fromTiny(tinymodel.Tensors(tinymodel.Config{Arch: a.arch, Hidden: a.hidden, Inter: a.inter, Layers: a.layers,
		Heads: a.heads, KVHeads: a.kvHeads, HeadDim: a.headDim, Vocab: a.vocab}, seed))
}

func (a archModel) write(t testing.TB, tensors []stTensor) string {
	t.Helper()
	dir := t.TempDir()
	b, err := json.Marshal(a.configJSON())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644))
	sort.Slice(tensors, func(i, j int) bool { return tensors[i].name < tensors[j].name })
	writeSafetensors(t, filepath.Join(dir, "model.safetensors"), tensors)
	return dir
}

var archModels = []archModel{
	{"Qwen3ForCausalLM", 32, 40, 2, 4, 2, 12, 50, map[string]any{"use_sliding_window": true, "sliding_window": 3, "max_window_layers": 1}},
	{"MistralForCausalLM", 32, 40, 2, 4, 2, 8, 50, map[string]any{"sliding_window": 3}},
	{"Phi3ForCausalLM", 32, 40, 2, 4, 2, 8, 50, map[string]any{"partial_rotary_factor": 0.5}},
	{"Gemma3ForCausalLM", 32, 40, 3, 4, 2, 8, 50, map[string]any{"sliding_window": 3, "sliding_window_pattern": 2,
		"query_pre_attn_scalar": 12, "rope_scaling": map[string]any{"rope_type": "linear", "factor": 2},
		"final_logit_softcapping": 2.5}},
}

// Decoding token by token reads the KV cache through the sliding windows, the two RoPE
// bases and the other variants; it must give the logits of one prefill over the whole
// sequence at every position.
func TestArchitecturesIncrementalDecodeMatchesPrefill(t *testing.T) {
	for _, a := range archModels {
		t.Run(a.arch, func(t *testing.T) {
			m, err := model.Load(a.write(t, a.tensors(5)), model.WithThreads(2))
			require.NoError(t, err)
			defer m.Close()
			ids := []int{1, 7, 3, 3, 0, a.vocab - 1, 12, 5, 9, 30}
			all, err := m.ForwardAll(m.NewState(), ids)
			require.NoError(t, err)
			full := append([]float32(nil), all.Float32s()...)
			if cap := m.Config().FinalLogitSoftcap; cap > 0 {
				for _, v := range full {
					require.LessOrEqual(t, math.Abs(float64(v)), cap)
				}
			}
			st := m.NewState()
			last, err := m.Forward(st, ids[:4]) // longer than the windows
			require.NoError(t, err)
			assert.InDeltaSlice(t, f64(full[3*a.vocab:4*a.vocab]), f64(last.Float32s()), 1e-5)
			for p := 4; p < len(ids); p++ {
				last, err = m.Forward(st, ids[p:p+1])
				require.NoError(t, err)
				assert.InDeltaSlice(t, f64(full[p*a.vocab:(p+1)*a.vocab]), f64(last.Float32s()), 1e-5, "position %d", p)
			}
		})
	}
}

func TestArchitecturesLoadErrorsNameTheTensor(t *testing.T) {
	without := func(ts []stTensor, name string) []stTensor {
		var out []stTensor
		for _, x := range ts {
			if x.name != name {
				out = append(out, x)
			}
		}
		return out
	}
	for _, tc := range []struct {
		a    archModel
		drop string
	}{
		{archModels[0], "model.layers.1.self_attn.k_norm.weight"},
		{archModels[2], "model.layers.0.self_attn.qkv_proj.weight"},
		{archModels[2], "model.layers.1.mlp.gate_up_proj.weight"},
		{archModels[3], "model.layers.2.post_feedforward_layernorm.weight"},
		{archModels[3], "model.layers.0.self_attn.q_norm.weight"},
	} {
		_, err := model.Load(tc.a.write(t, without(tc.a.tensors(1), tc.drop)))
		require.Error(t, err)
		assert.Contains(t, err.Error(), fmt.Sprintf("tensor %q not found", tc.drop))
	}
	// a fused projection of the wrong height names the fused tensor and both shapes
	a := archModels[2]
	ts := a.tensors(1)
	for i := range ts {
		if ts[i].name == "model.layers.0.self_attn.qkv_proj.weight" {
			ts[i].shape = []int{40, 32}
			ts[i].raw = ts[i].raw[:40*32*4]
		}
	}
	_, err := model.Load(a.write(t, ts))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"model.layers.0.self_attn.qkv_proj.weight"`)
	assert.Contains(t, err.Error(), "has shape [40 32], want [64 32]")
}

// A Gemma checkpoint in bf16 (model.WithExactBF16) runs as its f32 widening would, except for the embedding
// scale, which transformers rounds to the embedding's dtype. With hidden 16 (√16 = 4 is
// exact in bf16) the logits agree: the norms' 1+w is computed in f32 for both (1+w
// rounded back to bf16 would lose w's low bits and show here). With hidden 24 (√24 =
// 4.899 rounds to 4.906 in bf16) they differ.
func TestGemmaBF16NormsAndEmbedScale(t *testing.T) {
	for _, tc := range []struct {
		hidden int
		equal  bool
	}{{16, true}, {24, false}} {
		a := archModels[3]
		a.hidden = tc.hidden
		a.config = map[string]any{"sliding_window": 3, "sliding_window_pattern": 2}
		bf, f32 := toBF16Tensors(a.tensors(9)) // f32: the same values as bf, in f32
		mb, err := model.Load(a.write(t, bf), model.WithExactBF16())
		require.NoError(t, err)
		mf, err := model.Load(a.write(t, f32))
		require.NoError(t, err)
		ids := []int{4, 8, 15, 16, 23, 42}
		lb, err := mb.ForwardAll(mb.NewState(), ids)
		require.NoError(t, err)
		lf, err := mf.ForwardAll(mf.NewState(), ids)
		require.NoError(t, err)
		diff := 0.0
		for i, v := range lb.Float32s() {
			diff = max(diff, math.Abs(float64(v-lf.Float32s()[i])))
		}
		if tc.equal {
			assert.Less(t, diff, 1e-5, "hidden %d", tc.hidden)
		} else {
			assert.Greater(t, diff, 1e-4, "hidden %d: the bf16 checkpoint's embedding scale is rounded to bf16", tc.hidden)
			assert.Less(t, diff, 0.1, "hidden %d", tc.hidden)
		}
		mb.Close()
		mf.Close()
	}
}
