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

// runLogits runs the token ids through the model in one prefill (or, with --prefill N,
// a prefill of the first N and one decode step per later id, which reads the KV
// cache) and writes the logits of every position as little-endian float32, row after
// row: [len(ids) × vocab_size].
func runLogits(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("logits", stderr)
	dir := fs.String("model", "", "Hugging Face model directory (required); architectures: "+strings.Join(model.SupportedArchitectures(), ", "))
	idsFlag := fs.String("ids", "", "comma-separated token ids (required)")
	out := fs.String("out", "", "output file (required)")
	mf := addModelFlags(fs, "goroutines per product (0: GOMAXPROCS)")
	prefill := fs.Int("prefill", 0, "run the first N ids as one prefill and each later id as a decode step (0: all ids in one prefill)")
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
	if *prefill < 0 || *prefill > len(ids) {
		return usageError("--prefill %d: want 0..%d (the number of ids)", *prefill, len(ids))
	}
	n := len(ids)
	if *prefill > 0 {
		n = *prefill
	}
	mopts, release, err := mf.options()
	if err != nil {
		return err
	}
	defer release()
	m, err := model.Load(*dir, mopts...)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	defer m.Close()
	st := m.NewState()
	all, err := m.ForwardAll(st, ids[:n])
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	rows := append([]float32(nil), all.Float32s()...)
	for i := n; i < len(ids); i++ {
		last, err := m.Forward(st, ids[i:i+1])
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		rows = append(rows, last.Float32s()...)
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var buf [4]byte
	for _, v := range rows {
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
