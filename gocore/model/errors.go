package model

import "fmt"

// TensorError reports a tensor that a model needs but the checkpoint lacks, or has
// with the wrong shape.
type TensorError struct {
	Tensor  string // the tensor's name, e.g. "model.layers.3.mlp.up_proj.weight"
	Source  string // the file or directory searched
	Missing bool   // the tensor is absent
	Want    []int  // the shape the config implies (nil when Missing)
	Got     []int  // the shape in the file
	Hint    string // what to check, if anything
}

// Error says which tensor, where, and what is wrong with it.
func (e *TensorError) Error() string {
	var msg string
	if e.Missing {
		msg = fmt.Sprintf("model: tensor %q not found in %s", e.Tensor, e.Source)
	} else {
		msg = fmt.Sprintf("model: tensor %q in %s has shape %v, want %v (from config.json)", e.Tensor, e.Source, e.Got, e.Want)
	}
	if e.Hint != "" {
		msg += ": " + e.Hint
	}
	return msg
}

// ArchitectureError reports a config.json whose architecture the package cannot run.
type ArchitectureError struct {
	Path         string // config.json
	Architecture string // e.g. "MambaForCausalLM"; "" when the config names none
	Supported    []string
	Hint         string // what to do instead, if anything
}

// Error names the architecture and the supported ones.
func (e *ArchitectureError) Error() string {
	if e.Architecture == "" {
		return fmt.Sprintf("model: %s names no architecture (no \"architectures\" or \"model_type\"); supported: %v", e.Path, e.Supported)
	}
	msg := fmt.Sprintf("model: unsupported architecture %q in %s; supported: %v", e.Architecture, e.Path, e.Supported)
	if e.Hint != "" {
		msg += ": " + e.Hint
	}
	return msg
}

// ConfigError reports a missing or invalid config.json field.
type ConfigError struct {
	Path  string // config.json
	Field string // e.g. "num_key_value_heads"
	Msg   string
}

// Error names the file and the field.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("model: %s: %s: %s", e.Path, e.Field, e.Msg)
}
