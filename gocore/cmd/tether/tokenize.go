package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/tetherlm/tether/gocore/tokenizer"
)

func init() {
	register("tokenize", "encode text with a tokenizer.json and decode it back", runTokenize)
}

// runTokenize encodes text and decodes the ids back, printing one JSON object:
// {"ids": [...], "decoded": "...", "round_trip": true}. round_trip says whether the
// decoded text equals the input; the command fails (exit 1) when it does not.
func runTokenize(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tokenize", stderr)
	path := fs.String("tokenizer", "", "path of a Hugging Face tokenizer.json (required)")
	text := fs.String("text", "", "text to encode")
	input := fs.String("input", "", "file whose contents to encode (instead of --text)")
	addSpecial := fs.Bool("add-special", false, "add the tokenizer's special tokens (e.g. BOS)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return usageError("--tokenizer is required")
	}
	if *input != "" {
		data, err := os.ReadFile(*input)
		if err != nil {
			return usageError("%v", err)
		}
		*text = string(data)
	}
	tok, err := tokenizer.FromFile(*path)
	if err != nil {
		return usageError("%v", err)
	}
	defer tok.Close()
	ids, err := tok.Encode(*text, *addSpecial)
	if err != nil {
		return usageError("%v", err)
	}
	decoded, err := tok.Decode(ids, true)
	if err != nil {
		return err
	}
	out := struct {
		IDs       []uint32 `json:"ids"`
		Decoded   string   `json:"decoded"`
		RoundTrip bool     `json:"round_trip"`
	}{ids, decoded, decoded == *text}
	if out.IDs == nil {
		out.IDs = []uint32{}
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return err
	}
	if !out.RoundTrip {
		return &exitError{code: 1, err: fmt.Errorf("decoded text differs from the input")}
	}
	return nil
}
