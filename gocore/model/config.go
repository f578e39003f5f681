package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Supported architectures (config.json "architectures"), with the model_type that
// names them when "architectures" is absent.
var architectures = map[string]string{
	"LlamaForCausalLM": "llama",
	"Qwen2ForCausalLM": "qwen2",
}

// SupportedArchitectures lists the config.json architectures Load accepts.
func SupportedArchitectures() []string { return []string{"LlamaForCausalLM", "Qwen2ForCausalLM"} }

// Config is what the forward pass needs from a Llama-family config.json (Llama 2 and 3,
// SmolLM, Qwen2). Fields absent from the file take Hugging Face's defaults.
type Config struct {
	Architecture     string  // "LlamaForCausalLM" or "Qwen2ForCausalLM"
	HiddenSize       int     // hidden_size
	IntermediateSize int     // intermediate_size (SwiGLU MLP width)
	NumLayers        int     // num_hidden_layers
	NumHeads         int     // num_attention_heads
	NumKVHeads       int     // num_key_value_heads (grouped-query attention); default NumHeads
	HeadDim          int     // head_dim; default HiddenSize / NumHeads
	VocabSize        int     // vocab_size: rows of the embedding and of lm_head
	MaxPositions     int     // max_position_embeddings
	RMSNormEps       float64 // rms_norm_eps; default 1e-6
	RopeTheta        float64 // rope_theta (or rope_parameters.rope_theta); default 10000
	RopeScaling      *RopeScaling
	TieEmbeddings    bool // tie_word_embeddings: lm_head is the embedding matrix
	QKVBias          bool // q_proj, k_proj, v_proj have biases (Qwen2; Llama's attention_bias)
	OBias            bool // o_proj has a bias (Llama's attention_bias)
	MLPBias          bool // gate/up/down projections have biases (Llama's mlp_bias)
	EOSTokenIDs      []int
}

// RopeScaling is config.json's rope_scaling (transformers 4) or rope_parameters
// (transformers 5) when its type is not "default".
type RopeScaling struct {
	Type                 string  // "llama3" or "linear"
	Factor               float64 // factor
	LowFreqFactor        float64 // low_freq_factor (llama3)
	HighFreqFactor       float64 // high_freq_factor (llama3)
	OriginalMaxPositions int     // original_max_position_embeddings (llama3)
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
	RopeType                     string   `json:"rope_type"`
	Type                         string   `json:"type"`
	RopeTheta                    *float64 `json:"rope_theta"`
	Factor                       *float64 `json:"factor"`
	LowFreqFactor                *float64 `json:"low_freq_factor"`
	HighFreqFactor               *float64 `json:"high_freq_factor"`
	OriginalMaxPositionEmbedding *int     `json:"original_max_position_embeddings"`
}

// ParseConfig parses the contents of a config.json; path names it in errors.
func ParseConfig(data []byte, path string) (*Config, error) {
	var raw struct {
		Architectures     []string        `json:"architectures"`
		ModelType         string          `json:"model_type"`
		HiddenSize        int             `json:"hidden_size"`
		IntermediateSize  int             `json:"intermediate_size"`
		NumHiddenLayers   int             `json:"num_hidden_layers"`
		NumAttentionHeads int             `json:"num_attention_heads"`
		NumKeyValueHeads  *int            `json:"num_key_value_heads"`
		HeadDim           *int            `json:"head_dim"`
		VocabSize         int             `json:"vocab_size"`
		MaxPositions      int             `json:"max_position_embeddings"`
		RMSNormEps        *float64        `json:"rms_norm_eps"`
		RopeTheta         *float64        `json:"rope_theta"`
		RopeScaling       *ropeJSON       `json:"rope_scaling"`
		RopeParameters    *ropeJSON       `json:"rope_parameters"`
		TieWordEmbeddings *bool           `json:"tie_word_embeddings"`
		AttentionBias     bool            `json:"attention_bias"`
		MLPBias           bool            `json:"mlp_bias"`
		HiddenAct         string          `json:"hidden_act"`
		EOSTokenID        json.RawMessage `json:"eos_token_id"`
		UseSlidingWindow  bool            `json:"use_sliding_window"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, &ConfigError{Path: path, Field: "(file)", Msg: err.Error()}
	}
	c := &Config{}
	switch {
	case len(raw.Architectures) > 0:
		c.Architecture = raw.Architectures[0]
		if _, ok := architectures[c.Architecture]; !ok {
			return nil, &ArchitectureError{Path: path, Architecture: c.Architecture, Supported: SupportedArchitectures()}
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
	if raw.HeadDim != nil && *raw.HeadDim > 0 {
		c.HeadDim = *raw.HeadDim
	} else {
		if c.HiddenSize%c.NumHeads != 0 {
			return nil, &ConfigError{Path: path, Field: "hidden_size",
				Msg: fmt.Sprintf("%d is not a multiple of num_attention_heads %d (and head_dim is not given)", c.HiddenSize, c.NumHeads)}
		}
		c.HeadDim = c.HiddenSize / c.NumHeads
	}
	if c.HeadDim%2 != 0 {
		return nil, &ConfigError{Path: path, Field: "head_dim", Msg: fmt.Sprintf("rotary embeddings need an even head_dim, got %d", c.HeadDim)}
	}
	if raw.HiddenAct != "" && raw.HiddenAct != "silu" {
		return nil, &ConfigError{Path: path, Field: "hidden_act", Msg: fmt.Sprintf("only silu is supported, got %q", raw.HiddenAct)}
	}
	if raw.UseSlidingWindow {
		return nil, &ConfigError{Path: path, Field: "use_sliding_window", Msg: "sliding-window attention is not supported"}
	}
	c.RMSNormEps = 1e-6
	if raw.RMSNormEps != nil {
		c.RMSNormEps = *raw.RMSNormEps
	}
	c.RopeTheta = 10000
	if raw.RopeTheta != nil {
		c.RopeTheta = *raw.RopeTheta
	}
	rope := raw.RopeScaling
	if raw.RopeParameters != nil {
		rope = raw.RopeParameters
	}
	if rope != nil {
		if rope.RopeTheta != nil {
			c.RopeTheta = *rope.RopeTheta
		}
		typ := rope.RopeType
		if typ == "" {
			typ = rope.Type
		}
		switch typ {
		case "", "default":
		case "linear", "llama3":
			s := &RopeScaling{Type: typ, Factor: 1}
			if rope.Factor != nil {
				s.Factor = *rope.Factor
			}
			if typ == "llama3" {
				if rope.LowFreqFactor == nil || rope.HighFreqFactor == nil || rope.OriginalMaxPositionEmbedding == nil {
					return nil, &ConfigError{Path: path, Field: "rope_scaling",
						Msg: "llama3 scaling needs factor, low_freq_factor, high_freq_factor and original_max_position_embeddings"}
				}
				s.LowFreqFactor, s.HighFreqFactor = *rope.LowFreqFactor, *rope.HighFreqFactor
				s.OriginalMaxPositions = *rope.OriginalMaxPositionEmbedding
				if s.HighFreqFactor == s.LowFreqFactor {
					return nil, &ConfigError{Path: path, Field: "rope_scaling", Msg: "high_freq_factor equals low_freq_factor"}
				}
			}
			if s.Factor <= 0 {
				return nil, &ConfigError{Path: path, Field: "rope_scaling.factor", Msg: fmt.Sprintf("must be positive, got %g", s.Factor)}
			}
			c.RopeScaling = s
		default:
			return nil, &ConfigError{Path: path, Field: "rope_scaling", Msg: fmt.Sprintf("rope type %q is not supported (default, linear, llama3 are)", typ)}
		}
	}
	if c.RopeTheta <= 0 {
		return nil, &ConfigError{Path: path, Field: "rope_theta", Msg: fmt.Sprintf("must be positive, got %g", c.RopeTheta)}
	}
	if raw.TieWordEmbeddings != nil {
		c.TieEmbeddings = *raw.TieWordEmbeddings
	}
	switch c.Architecture {
	case "Qwen2ForCausalLM":
		c.QKVBias = true
	case "LlamaForCausalLM":
		c.QKVBias, c.OBias = raw.AttentionBias, raw.AttentionBias
		c.MLPBias = raw.MLPBias
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
