package main

import (
	"bufio"
	"encoding/hex"
	"io"
	"os"
	"strconv"

	"github.com/tetherlm/tether/gocore/vocab"
)

func init() {
	register("vocab", "print every token's exact bytes and whether it is special or ends generation", runVocab)
}

// runVocab prints one JSON object per token id, 0 to the model size - 1:
// {"id":42,"hex":"20746865","special":false,"eog":false}. hex is the token's exact
// bytes (empty for special and padding ids). tokenizer_config.json,
// generation_config.json and config.json beside the tokenizer are read when present;
// --config, --generation-config and --model-size take precedence over them.
func runVocab(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("vocab", stderr)
	path := fs.String("tokenizer", "", "path of a Hugging Face tokenizer.json (required)")
	configPath := fs.String("config", "", "path of tokenizer_config.json (default: beside the tokenizer, if there)")
	genPath := fs.String("generation-config", "", "path of the model's generation_config.json (default: beside the tokenizer, if there)")
	modelSize := fs.Int("model-size", 0, "the model's vocabulary size when larger than the tokenizer's (padding ids)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return usageError("--tokenizer is required")
	}
	if *modelSize < 0 {
		return usageError("--model-size must not be negative")
	}
	opts := []vocab.Option{vocab.WithModelSize(*modelSize)}
	for _, f := range []struct {
		path string
		opt  func([]byte) vocab.Option
	}{{*configPath, vocab.WithTokenizerConfig}, {*genPath, vocab.WithGenerationConfig}} {
		if f.path == "" {
			continue
		}
		data, err := os.ReadFile(f.path)
		if err != nil {
			return usageError("%v", err)
		}
		opts = append(opts, f.opt(data))
	}
	v, err := vocab.LoadFile(*path, opts...)
	if err != nil {
		return usageError("%v", err)
	}

	w := bufio.NewWriterSize(stdout, 1<<16)
	line := make([]byte, 0, 256)
	for id := 0; id < v.ModelSize(); id++ {
		line = append(line[:0], `{"id":`...)
		line = strconv.AppendInt(line, int64(id), 10)
		line = append(line, `,"hex":"`...)
		line = hex.AppendEncode(line, v.TokenBytes(id))
		line = append(line, `","special":`...)
		line = strconv.AppendBool(line, v.IsSpecial(id))
		line = append(line, `,"eog":`...)
		line = strconv.AppendBool(line, v.IsEOG(id))
		line = append(line, "}\n"...)
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return w.Flush()
}
