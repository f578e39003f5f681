package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/tetherlm/tether/gocore/model"
)

func init() {
	register("logits", "write a model's logits at every position of a token sequence", runLogits)
}

// runLogits runs the token ids through the model in one prefill and writes the logits
// of every position as little-endian float32, row after row: [len(ids) × vocab_size].
func runLogits(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("logits", stderr)
	dir := fs.String("model", "", "Hugging Face model directory (required)")
	idsFlag := fs.String("ids", "", "comma-separated token ids (required)")
	out := fs.String("out", "", "output file (required)")
	threads := fs.Int("threads", 0, "goroutines per product (0: GOMAXPROCS)")
	bf16Math := fs.Bool("bf16-math", false, "bf16 checkpoints: multiply in bf16 as PyTorch does (AVX512-BF16 CPUs), not exactly in float32")
	weights := fs.String("weights", "", weightsHelp)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || *idsFlag == "" || *out == "" {
		return usageError("--model, --ids and --out are required")
	}
	ids, err := parseIDs(*idsFlag)
	if err != nil {
		return usageError("--ids: %v", err)
	}
	mopts := []model.Option{model.WithThreads(*threads)}
	if *bf16Math {
		mopts = append(mopts, model.WithBF16Math())
	}
	if mopts, err = weightsOption(mopts, *weights); err != nil {
		return err
	}
	m, err := model.Load(*dir, mopts...)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	defer m.Close()
	logits, err := m.ForwardAll(m.NewState(), ids)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var buf [4]byte
	for _, v := range logits.Float32s() {
		binary.LittleEndian.PutUint32(buf[:], math.Float32bits(v))
		w.Write(buf[:])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "tether logits: %d positions × %d logits to %s\n", len(ids), m.Config().VocabSize, *out)
	return nil
}

// parseIDs reads "1,2,3" (spaces allowed).
func parseIDs(s string) ([]int, error) {
	var ids []int
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		id, err := strconv.Atoi(part)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("item %d: %q is not a token id", i+1, part)
		}
		ids = append(ids, id)
	}
	return ids, nil
}
