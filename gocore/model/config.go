package model

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// Supported architectures (config.json "architectures"), with the model_type that
// names them when "architectures" is absent.
var architectures = map[string]string{
	"LlamaForCausalLM":   "llama",
	"Qwen2ForCausalLM":   "qwen2",
	"Qwen3ForCausalLM":   "qwen3",
	"MistralForCausalLM": "mistral",
	"Phi3ForCausalLM":    "phi3",
	"Gemma3ForCausalLM":  "gemma3_text",
}

// SupportedArchitectures lists the config.json architectures Load accepts.
func SupportedArchitectures() []string {
	return []string{"LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "MistralForCausalLM",
		"Phi3ForCausalLM", "Gemma3ForCausalLM"}
}

// Layer types (config.json "layer_types").
const (
	FullAttention    = "full_attention"
	SlidingAttention = "sliding_attention"
)

// Config is what the forward pass needs from a config.json of a supported decoder
// (Llama 2 and 3, SmolLM, Qwen2, Qwen3, Mistral, Phi-3, Gemma 3 text). Fields absent
// from the file take transformers' defaults for the architecture. Every architecture
// runs the same forward pass; the fields below the first block switch its variants on.
type Config struct {
	Architecture     string  // one of SupportedArchitectures
	HiddenSize       int     // hidden_size
	IntermediateSize int     // intermediate_size (gated MLP width)
	NumLayers        int     // num_hidden_layers
	NumHeads         int     // num_attention_heads
	NumKVHeads       int     // num_key_value_heads (grouped-query attention); default NumHeads
	HeadDim          int     // head_dim; default HiddenSize / NumHeads (Qwen3: 128, Gemma3: 256)
	VocabSize        int     // vocab_size: rows of the embedding and of lm_head
	MaxPositions     int     // max_position_embeddings
	RMSNormEps       float64 // rms_norm_eps; default 1e-6 (Phi-3: 1e-5)
	RopeTheta        float64 // rope_theta (or rope_parameters.rope_theta); default 10000 (Gemma3: 1e6)
	RopeScaling      *RopeScaling
	TieEmbeddings    bool // tie_word_embeddings: lm_head is the embedding matrix (default false; Gemma3 true)
	QKVBias          bool // q_proj, k_proj, v_proj have biases (Qwen2; attention_bias elsewhere)
	OBias            bool // o_proj has a bias (attention_bias of Llama, Qwen3, Gemma3)
	MLPBias          bool // gate/up/down projections have biases (Llama's mlp_bias)
	EOSTokenIDs      []int

	// Activation is the MLP gate's activation: hidden_act ("silu", "gelu_pytorch_tanh"),
	// for Gemma3 hidden_activation (default gelu_pytorch_tanh).
	Activation Activation
	// QKNorm: q and k are normalized per head (self_attn.q_norm, k_norm, RMSNorm over
	// head_dim) after the projections, before RoPE (Qwen3, Gemma3).
	QKNorm bool
	// NormPlusOne: every RMSNorm multiplies by 1+w, w as stored (Gemma). Load uploads
	// 1+w computed in float32 (as transformers does: x·(1+w.float())).
	NormPlusOne bool
	// SandwichNorms: post_attention_layernorm normalizes the attention output before
	// the residual add, and the MLP is wrapped in pre_feedforward_layernorm and
	// post_feedforward_layernorm (Gemma3). Without it post_attention_layernorm is the
	// MLP's input norm (Llama).
	SandwichNorms bool
	// EmbedScale: the embedding is multiplied by √hidden_size, rounded to the
	// embedding's dtype as transformers does (Gemma).
	EmbedScale bool
	// AttnScale multiplies q·k; 0 means 1/√head_dim. Gemma3: query_pre_attn_scalar^-½.
	AttnScale float64
	// SlidingWindow is sliding_window: a sliding-attention layer's query sees the last
	// SlidingWindow positions, itself included (0: no sliding layers).
	SlidingWindow int
	// LayerTypes holds FullAttention or SlidingAttention per layer: layer_types, or what
	// transformers derives (Gemma3: sliding_window_pattern; Qwen2/3: use_sliding_window
	// and max_window_layers; Mistral, Phi-3: every layer sliding when sliding_window is
	// set).
	LayerTypes []string
	// LocalRopeTheta is the RoPE base of sliding layers when they have their own
	// (Gemma3: rope_local_base_freq, or rope_parameters.sliding_attention.rope_theta;
	// default 10000), without scaling; 0: sliding layers use RopeTheta and RopeScaling.
	LocalRopeTheta float64
	// RotaryDim is how many of each head's values RoPE rotates: head_dim ×
	// partial_rotary_factor (Phi-3); default HeadDim.
	RotaryDim int
	// FinalLogitSoftcap: logits become cap·tanh(logits/cap) (final_logit_softcapping;
	// 0: none). Gemma3's attn_logit_softcapping is not read: transformers' Gemma3
	// attention does not apply it either.
	FinalLogitSoftcap float64
	// FusedQKV, FusedGateUp: the checkpoint stores self_attn.qkv_proj (q, k, v rows
	// stacked) and mlp.gate_up_proj (gate rows, then up rows) (Phi-3). Load splits them
	// into the separate projections.
	FusedQKV, FusedGateUp bool
}

// Window returns the attention window of layer i: SlidingWindow for a sliding layer,
// 0 (every earlier position) for a full one.
func (c *Config) Window(i int) int {
	if i < len(c.LayerTypes) && c.LayerTypes[i] == SlidingAttention {
		return c.SlidingWindow
	}
	return 0
}

// RopeScaling is config.json's rope_scaling (transformers 4) or rope_parameters
// (transformers 5) when its type is not "default".
type RopeScaling struct {
	Type                 string  // "llama3", "linear" or "longrope" ("su" and Phi-3's "yarn" read as longrope)
	Factor               float64 // factor
	LowFreqFactor        float64 // low_freq_factor (llama3)
	HighFreqFactor       float64 // high_freq_factor (llama3)
	OriginalMaxPositions int     // original_max_position_embeddings (llama3, longrope)
	// longrope: per-frequency divisors, short_factor for sequences up to
	// OriginalMaxPositions, long_factor beyond (RotaryDim/2 entries each), and the
	// factor by which cos and sin are multiplied (attention_factor; default from
	// Factor as transformers computes it).
	ShortFactor, LongFactor []float64
	AttentionFactor         float64
}

// LoadConfig reads dir/config.json.
func LoadConfig(dir string) (*Config, error) {
	path := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model: %v (a Hugging Face model directory needs config.json)", err)
	}
	return ParseConfig(data, path)
}

type ropeJSON struct {
	RopeType                     string    `json:"rope_type"`
	Type                         string    `json:"type"`
	RopeTheta                    *float64  `json:"rope_theta"`
	Factor                       *float64  `json:"factor"`
	LowFreqFactor                *float64  `json:"low_freq_factor"`
	HighFreqFactor               *float64  `json:"high_freq_factor"`
	OriginalMaxPositionEmbedding *int      `json:"original_max_position_embeddings"`
	PartialRotaryFactor          *float64  `json:"partial_rotary_factor"`
	ShortFactor                  []float64 `json:"short_factor"`
	LongFactor                   []float64 `json:"long_factor"`
	AttentionFactor              *float64  `json:"attention_factor"`
	// Gemma3's transformers 5 spelling: one set of parameters per layer type.
	Full    *ropeJSON `json:"full_attention"`
	Sliding *ropeJSON `json:"sliding_attention"`
}

func (r *ropeJSON) typ() string {
	if r.RopeType != "" {
		return r.RopeType
	}
	return r.Type
}

// ParseConfig parses the contents of a config.json; path names it in errors.
func ParseConfig(data []byte, path string) (*Config, error) {
	var raw struct {
		Architectures       []string        `json:"architectures"`
		ModelType           string          `json:"model_type"`
		HiddenSize          int             `json:"hidden_size"`
		IntermediateSize    int             `json:"intermediate_size"`
		NumHiddenLayers     int             `json:"num_hidden_layers"`
		NumAttentionHeads   int             `json:"num_attention_heads"`
		NumKeyValueHeads    *int            `json:"num_key_value_heads"`
		HeadDim             *int            `json:"head_dim"`
		VocabSize           int             `json:"vocab_size"`
		MaxPositions        int             `json:"max_position_embeddings"`
		OrigMaxPositions    *int            `json:"original_max_position_embeddings"`
		RMSNormEps          *float64        `json:"rms_norm_eps"`
		RopeTheta           *float64        `json:"rope_theta"`
		RopeLocalBaseFreq   *float64        `json:"rope_local_base_freq"`
		RopeScaling         *ropeJSON       `json:"rope_scaling"`
		RopeParameters      *ropeJSON       `json:"rope_parameters"`
		PartialRotaryFactor *float64        `json:"partial_rotary_factor"`
		TieWordEmbeddings   *bool           `json:"tie_word_embeddings"`
		AttentionBias       bool            `json:"attention_bias"`
		MLPBias             bool            `json:"mlp_bias"`
		HiddenAct           string          `json:"hidden_act"`
		HiddenActivation    string          `json:"hidden_activation"`
		EOSTokenID          json.RawMessage `json:"eos_token_id"`
		UseSlidingWindow    bool            `json:"use_sliding_window"`
		SlidingWindow       json.RawMessage `json:"sliding_window"`
		SlidingPattern      *int            `json:"sliding_window_pattern"`
		MaxWindowLayers     *int            `json:"max_window_layers"`
		LayerTypes          []string        `json:"layer_types"`
		QueryPreAttnScalar  *float64        `json:"query_pre_attn_scalar"`
		FinalLogitSoftcap   *float64        `json:"final_logit_softcapping"`
		Bidirectional       *bool           `json:"use_bidirectional_attention"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, &ConfigError{Path: path, Field: "(file)", Msg: err.Error()}
	}
	c := &Config{}
	switch {
	case len(raw.Architectures) > 0:
		c.Architecture = raw.Architectures[0]
		if _, ok := architectures[c.Architecture]; !ok {
			ae := &ArchitectureError{Path: path, Architecture: c.Architecture, Supported: SupportedArchitectures()}
			if c.Architecture == "Gemma3ForConditionalGeneration" {
				ae.Hint = "that is the multimodal Gemma 3 (4B and larger), whose text model sits under text_config and language_model; only Gemma3ForCausalLM (model_type gemma3_text) checkpoints are supported"
			}
			return nil, ae
		}
	case raw.ModelType != "":
		for a, mt := range architectures {
			if mt == raw.ModelType {
				c.Architecture = a
			}
		}
		if c.Architecture == "" {
			return nil, &ArchitectureError{Path: path, Architecture: "model_type " + raw.ModelType, Supported: SupportedArchitectures()}
		}
	default:
		return nil, &ArchitectureError{Path: path, Supported: SupportedArchitectures()}
	}
	arch := c.Architecture
	gemma := arch == "Gemma3ForCausalLM"
	positive := func(field string, v int) error {
		if v <= 0 {
			return &ConfigError{Path: path, Field: field, Msg: fmt.Sprintf("must be a positive integer, got %d", v)}
		}
		return nil
	}
	c.HiddenSize, c.IntermediateSize, c.NumLayers = raw.HiddenSize, raw.IntermediateSize, raw.NumHiddenLayers
	c.NumHeads, c.VocabSize, c.MaxPositions = raw.NumAttentionHeads, raw.VocabSize, raw.MaxPositions
	for _, f := range []struct {
		name string
		v    int
	}{{"hidden_size", c.HiddenSize}, {"intermediate_size", c.IntermediateSize}, {"num_hidden_layers", c.NumLayers},
		{"num_attention_heads", c.NumHeads}, {"vocab_size", c.VocabSize}} {
		if err := positive(f.name, f.v); err != nil {
			return nil, err
		}
	}
	c.NumKVHeads = c.NumHeads
	if raw.NumKeyValueHeads != nil {
		c.NumKVHeads = *raw.NumKeyValueHeads
		if err := positive("num_key_value_heads", c.NumKVHeads); err != nil {
			return nil, err
		}
	}
	if c.NumHeads%c.NumKVHeads != 0 {
		return nil, &ConfigError{Path: path, Field: "num_key_value_heads",
			Msg: fmt.Sprintf("%d does not divide num_attention_heads %d", c.NumKVHeads, c.NumHeads)}
	}
	switch {
	case raw.HeadDim != nil && *raw.HeadDim > 0:
		c.HeadDim = *raw.HeadDim
	case arch == "Qwen3ForCausalLM" && raw.HeadDim == nil:
		c.HeadDim = 128 // transformers' Qwen3Config default
	case gemma && raw.HeadDim == nil:
		c.HeadDim = 256 // Gemma3TextConfig default
	default:
		if c.HiddenSize%c.NumHeads != 0 {
			return nil, &ConfigError{Path: path, Field: "hidden_size",
				Msg: fmt.Sprintf("%d is not a multiple of num_attention_heads %d (and head_dim is not given)", c.HiddenSize, c.NumHeads)}
		}
		c.HeadDim = c.HiddenSize / c.NumHeads
	}

	act, actField := raw.HiddenAct, "hidden_act"
	if gemma {
		act, actField = raw.HiddenActivation, "hidden_activation"
		if act == "" {
			act = "gelu_pytorch_tanh"
		}
	}
	switch act {
	case "", "silu", "swish":
		c.Activation = SiLU
	case "gelu_pytorch_tanh":
		c.Activation = GELUTanh
	default:
		return nil, &ConfigError{Path: path, Field: actField, Msg: fmt.Sprintf("only silu and gelu_pytorch_tanh are supported, got %q", act)}
	}

	c.RMSNormEps = 1e-6
	if arch == "Phi3ForCausalLM" {
		c.RMSNormEps = 1e-5
	}
	if raw.RMSNormEps != nil {
		c.RMSNormEps = *raw.RMSNormEps
	}
	if err := parseRope(c, &raw.RopeTheta, raw.RopeScaling, raw.RopeParameters, raw.RopeLocalBaseFreq, raw.OrigMaxPositions, path); err != nil {
		return nil, err
	}
	// Partial rotary embeddings: rope_parameters (transformers 5) or the top level.
	prf := raw.PartialRotaryFactor
	for _, r := range []*ropeJSON{raw.RopeScaling, raw.RopeParameters} {
		if r != nil && r.PartialRotaryFactor != nil {
			prf = r.PartialRotaryFactor
		}
	}
	c.RotaryDim = c.HeadDim
	if prf != nil {
		if *prf <= 0 || *prf > 1 {
			return nil, &ConfigError{Path: path, Field: "partial_rotary_factor", Msg: fmt.Sprintf("must be in (0, 1], got %g", *prf)}
		}
		if arch != "Phi3ForCausalLM" && *prf != 1 {
			return nil, &ConfigError{Path: path, Field: "partial_rotary_factor", Msg: fmt.Sprintf("%g is supported for Phi3ForCausalLM only", *prf)}
		}
		c.RotaryDim = int(float64(c.HeadDim) * *prf)
	}
	if c.RotaryDim%2 != 0 || c.RotaryDim == 0 {
		return nil, &ConfigError{Path: path, Field: "head_dim", Msg: fmt.Sprintf("rotary embeddings need an even, positive number of rotated dimensions, got %d (head_dim %d)", c.RotaryDim, c.HeadDim)}
	}
	if s := c.RopeScaling; s != nil && s.Type == "longrope" {
		if len(s.ShortFactor) != c.RotaryDim/2 || len(s.LongFactor) != c.RotaryDim/2 {
			return nil, &ConfigError{Path: path, Field: "rope_scaling",
				Msg: fmt.Sprintf("longrope short_factor and long_factor need %d entries (rotary dimension / 2), got %d and %d", c.RotaryDim/2, len(s.ShortFactor), len(s.LongFactor))}
		}
		if s.Factor == 0 { // transformers: max_position_embeddings / original_max_position_embeddings
			s.Factor = float64(c.MaxPositions) / float64(s.OriginalMaxPositions)
		}
		if s.AttentionFactor == 0 {
			s.AttentionFactor = 1
			if s.Factor > 1 {
				s.AttentionFactor = math.Sqrt(1 + math.Log(s.Factor)/math.Log(float64(s.OriginalMaxPositions)))
			}
		}
	}

	if gemma {
		c.TieEmbeddings = true
	}
	if raw.TieWordEmbeddings != nil {
		c.TieEmbeddings = *raw.TieWordEmbeddings
	}
	switch arch {
	case "Qwen2ForCausalLM":
		c.QKVBias = true
	case "LlamaForCausalLM":
		c.QKVBias, c.OBias = raw.AttentionBias, raw.AttentionBias
		c.MLPBias = raw.MLPBias
	case "Qwen3ForCausalLM":
		c.QKVBias, c.OBias = raw.AttentionBias, raw.AttentionBias
		c.QKNorm = true
	case "Phi3ForCausalLM":
		c.FusedQKV, c.FusedGateUp = true, true
	case "Gemma3ForCausalLM":
		c.QKVBias, c.OBias = raw.AttentionBias, raw.AttentionBias
		c.QKNorm, c.NormPlusOne, c.SandwichNorms, c.EmbedScale = true, true, true, true
		scalar := 256.0
		if raw.QueryPreAttnScalar != nil {
			scalar = *raw.QueryPreAttnScalar
		}
		if scalar <= 0 {
			return nil, &ConfigError{Path: path, Field: "query_pre_attn_scalar", Msg: fmt.Sprintf("must be positive, got %g", scalar)}
		}
		c.AttnScale = math.Pow(scalar, -0.5)
		if raw.FinalLogitSoftcap != nil {
			if *raw.FinalLogitSoftcap <= 0 {
				return nil, &ConfigError{Path: path, Field: "final_logit_softcapping", Msg: fmt.Sprintf("must be positive or null, got %g", *raw.FinalLogitSoftcap)}
			}
			c.FinalLogitSoftcap = *raw.FinalLogitSoftcap
		}
		if raw.Bidirectional != nil && *raw.Bidirectional {
			return nil, &ConfigError{Path: path, Field: "use_bidirectional_attention", Msg: "bidirectional attention is not supported (a causal decoder is)"}
		}
	}
	if err := parseLayerTypes(c, &raw.LayerTypes, raw.SlidingWindow, raw.UseSlidingWindow, raw.SlidingPattern, raw.MaxWindowLayers, path); err != nil {
		return nil, err
	}
	if len(raw.EOSTokenID) > 0 && string(raw.EOSTokenID) != "null" {
		var one int
		if json.Unmarshal(raw.EOSTokenID, &one) == nil {
			c.EOSTokenIDs = []int{one}
		} else {
			_ = json.Unmarshal(raw.EOSTokenID, &c.EOSTokenIDs)
		}
	}
	return c, nil
}

// parseLayerTypes sets SlidingWindow and LayerTypes as transformers derives them for
// the architecture.
func parseLayerTypes(c *Config, given *[]string, windowRaw json.RawMessage, useSliding bool, pattern, maxWindowLayers *int, path string) error {
	window := 0
	absent := len(windowRaw) == 0
	if !absent && string(windowRaw) != "null" {
		if err := json.Unmarshal(windowRaw, &window); err != nil || window <= 0 {
			return &ConfigError{Path: path, Field: "sliding_window", Msg: fmt.Sprintf("must be a positive integer or null, got %s", windowRaw)}
		}
	}
	types := make([]string, c.NumLayers)
	for i := range types {
		types[i] = FullAttention
	}
	switch c.Architecture {
	case "LlamaForCausalLM":
		window = 0
	case "MistralForCausalLM", "Phi3ForCausalLM":
		if absent && c.Architecture == "MistralForCausalLM" {
			window = 4096 // MistralConfig's default
		}
		if window > 0 {
			for i := range types {
				types[i] = SlidingAttention
			}
		}
	case "Qwen2ForCausalLM", "Qwen3ForCausalLM":
		if absent {
			window = 4096
		}
		if !useSliding {
			window = 0
		}
		if window > 0 {
			if len(*given) > 0 {
				types = *given
			} else {
				mwl := 28
				if maxWindowLayers != nil {
					mwl = *maxWindowLayers
				}
				for i := range types {
					if i >= mwl {
						types[i] = SlidingAttention
					}
				}
			}
		}
	case "Gemma3ForCausalLM":
		if absent {
			window = 4096
		}
		if len(*given) > 0 {
			types = *given
		} else {
			p := 6
			if pattern != nil {
				p = *pattern
			}
			if p <= 0 {
				return &ConfigError{Path: path, Field: "sliding_window_pattern", Msg: fmt.Sprintf("must be positive, got %d", p)}
			}
			for i := range types {
				if (i+1)%p != 0 {
					types[i] = SlidingAttention
				}
			}
		}
	}
	if len(types) != c.NumLayers {
		return &ConfigError{Path: path, Field: "layer_types", Msg: fmt.Sprintf("has %d entries for %d layers", len(types), c.NumLayers)}
	}
	sliding := false
	for i, t := range types {
		switch t {
		case FullAttention:
		case SlidingAttention:
			sliding = true
		default:
			return &ConfigError{Path: path, Field: "layer_types", Msg: fmt.Sprintf("layer %d has type %q (full_attention and sliding_attention are supported)", i, t)}
		}
	}
	if sliding && window <= 0 {
		return &ConfigError{Path: path, Field: "sliding_window", Msg: "sliding_attention layers need a positive sliding_window"}
	}
	if !sliding {
		window = 0
	}
	c.SlidingWindow, c.LayerTypes = window, types
	return nil
}

// parseRope sets RopeTheta, RopeScaling and LocalRopeTheta from the transformers 4
// spelling (rope_theta, rope_scaling, Gemma3's rope_local_base_freq) or the
// transformers 5 one (rope_parameters, for Gemma3 one entry per layer type).
func parseRope(c *Config, theta **float64, scaling, params *ropeJSON, localBase *float64, origMax *int, path string) error {
	gemma := c.Architecture == "Gemma3ForCausalLM"
	c.RopeTheta = 10000
	if gemma {
		c.RopeTheta = 1e6
		c.LocalRopeTheta = 10000
		if localBase != nil {
			c.LocalRopeTheta = *localBase
		}
	}
	if *theta != nil {
		c.RopeTheta = **theta
	}
	rope := scaling
	if params != nil {
		rope = params
		if params.Full != nil || params.Sliding != nil {
			if !gemma {
				return &ConfigError{Path: path, Field: "rope_parameters", Msg: "per-layer-type rope parameters are supported for Gemma3ForCausalLM only"}
			}
			if s := params.Sliding; s != nil {
				if t := s.typ(); t != "" && t != "default" {
					return &ConfigError{Path: path, Field: "rope_parameters.sliding_attention", Msg: fmt.Sprintf("rope type %q is not supported for sliding layers (default is)", t)}
				}
				if s.RopeTheta != nil {
					c.LocalRopeTheta = *s.RopeTheta
				}
			}
			rope = params.Full
		}
	}
	if rope != nil {
		if rope.RopeTheta != nil {
			c.RopeTheta = *rope.RopeTheta
		}
		typ := rope.typ()
		if c.Architecture == "Phi3ForCausalLM" && (typ == "su" || typ == "yarn") {
			typ = "longrope" // transformers' Phi3Config reads both as longrope
		}
		switch typ {
		case "", "default":
		case "linear", "llama3", "longrope":
			s := &RopeScaling{Type: typ, Factor: 1}
			if rope.Factor != nil {
				s.Factor = *rope.Factor
			}
			switch typ {
			case "llama3":
				if rope.LowFreqFactor == nil || rope.HighFreqFactor == nil || rope.OriginalMaxPositionEmbedding == nil {
					return &ConfigError{Path: path, Field: "rope_scaling",
						Msg: "llama3 scaling needs factor, low_freq_factor, high_freq_factor and original_max_position_embeddings"}
				}
				s.LowFreqFactor, s.HighFreqFactor = *rope.LowFreqFactor, *rope.HighFreqFactor
				s.OriginalMaxPositions = *rope.OriginalMaxPositionEmbedding
				if s.HighFreqFactor == s.LowFreqFactor {
					return &ConfigError{Path: path, Field: "rope_scaling", Msg: "high_freq_factor equals low_freq_factor"}
				}
			case "longrope":
				if c.Architecture != "Phi3ForCausalLM" {
					return &ConfigError{Path: path, Field: "rope_scaling", Msg: "longrope scaling is supported for Phi3ForCausalLM only"}
				}
				if rope.Factor == nil {
					s.Factor = 0 // derived once max_position_embeddings is known
				}
				s.ShortFactor, s.LongFactor = rope.ShortFactor, rope.LongFactor
				switch {
				case rope.OriginalMaxPositionEmbedding != nil:
					s.OriginalMaxPositions = *rope.OriginalMaxPositionEmbedding
				case origMax != nil:
					s.OriginalMaxPositions = *origMax
				default:
					s.OriginalMaxPositions = 4096 // Phi3Config's default
				}
				if s.OriginalMaxPositions <= 0 {
					return &ConfigError{Path: path, Field: "original_max_position_embeddings", Msg: fmt.Sprintf("must be positive, got %d", s.OriginalMaxPositions)}
				}
				if rope.AttentionFactor != nil {
					if *rope.AttentionFactor <= 0 {
						return &ConfigError{Path: path, Field: "rope_scaling.attention_factor", Msg: fmt.Sprintf("must be positive, got %g", *rope.AttentionFactor)}
					}
					s.AttentionFactor = *rope.AttentionFactor
				}
			}
			if s.Factor < 0 || (s.Factor == 0 && typ != "longrope") {
				return &ConfigError{Path: path, Field: "rope_scaling.factor", Msg: fmt.Sprintf("must be positive, got %g", s.Factor)}
			}
			c.RopeScaling = s
		default:
			supported := "default, linear, llama3 are"
			if c.Architecture == "Phi3ForCausalLM" {
				supported = "default, linear, llama3, longrope (su) are"
			}
			return &ConfigError{Path: path, Field: "rope_scaling", Msg: fmt.Sprintf("rope type %q is not supported (%s)", typ, supported)}
		}
	}
	if c.RopeTheta <= 0 {
		return &ConfigError{Path: path, Field: "rope_theta", Msg: fmt.Sprintf("must be positive, got %g", c.RopeTheta)}
	}
	if gemma && c.LocalRopeTheta <= 0 {
		return &ConfigError{Path: path, Field: "rope_local_base_freq", Msg: fmt.Sprintf("must be positive, got %g", c.LocalRopeTheta)}
	}
	return nil
}
