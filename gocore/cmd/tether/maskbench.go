package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/tetherlm/tether/gocore/tokenmask"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/tokenizer"
	"github.com/tetherlm/tether/gocore/vocab"
)

func init() {
	register("mask-bench", "time token masks along a tokenized input", runMaskBench)
}

// maskStats summarizes durations in microseconds.
type maskStats struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

func summarizeMasks(d []time.Duration) maskStats {
	if len(d) == 0 {
		return maskStats{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	us := func(x time.Duration) float64 { return float64(x.Nanoseconds()) / 1e3 }
	q := func(p float64) float64 { return us(s[int(p*float64(len(s)-1)+0.5)]) }
	var sum time.Duration
	for _, x := range s {
		sum += x
	}
	return maskStats{P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: us(s[len(s)-1]), Mean: us(sum) / float64(len(s))}
}

// runMaskBench tokenizes the input with the real tokenizer and steps a matcher
// through it, computing the full mask before every token and checking the token is
// in it. It prints one JSON object with the timings: mask_us over every step of
// every pass, first_pass_mask_us (cold per-grammar caches) and warm_mask_us (passes
// after the first); vocab_ms is loading the vocabulary plus building its trie.
func runMaskBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("mask-bench", stderr)
	tokPath := fs.String("tokenizer", "", "Hugging Face tokenizer.json (required)")
	grammarPath := fs.String("grammar", "", "GBNF grammar file (required)")
	root := fs.String("root", "", "start rule (default root)")
	input := fs.String("input", "", "text the grammar accepts (required)")
	repeat := fs.Int("repeat", 1, "step through the input this many times (caches warm after the first)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *tokPath == "" || *grammarPath == "" || *input == "" {
		return usageError("--tokenizer, --grammar and --input are required")
	}
	if *repeat < 1 {
		return usageError("--repeat must be at least 1")
	}
	src, err := os.ReadFile(*grammarPath)
	if err != nil {
		return usageError("%v", err)
	}
	text, err := os.ReadFile(*input)
	if err != nil {
		return usageError("%v", err)
	}
	tok, err := tokenizer.FromFile(*tokPath)
	if err != nil {
		return usageError("%v", err)
	}
	defer tok.Close()
	ids32, err := tok.Encode(string(text), false)
	if err != nil {
		return usageError("%v", err)
	}

	t0 := time.Now()
	v, err := vocab.LoadFile(*tokPath)
	if err != nil {
		return usageError("%v", err)
	}
	loadDur := time.Since(t0)
	t1 := time.Now()
	if err := engine.Prepare(v); err != nil {
		return err
	}
	trieDur := time.Since(t1)

	t2 := time.Now()
	var opts []gbnf.Option
	if *root != "" {
		opts = append(opts, gbnf.WithRoot(*root))
	}
	g, err := gbnf.Parse(string(src), opts...)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("%s: %w", *grammarPath, err)}
	}
	gr, err := engine.Compile(g, v)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("%s: %w", *grammarPath, err)}
	}
	compileDur := time.Since(t2)

	m := gr.NewMatcher()
	mask := tokenmask.New(v.Size())
	var times, first, warm []time.Duration
	var counts []int
	runtime.GC()
	for r := 0; r < *repeat; r++ {
		m.Reset()
		for step, id32 := range ids32 {
			id := int(id32)
			ts := time.Now()
			if err := m.FillMask(mask); err != nil {
				return fmt.Errorf("step %d: %w", step, err)
			}
			d := time.Since(ts)
			times = append(times, d)
			if r == 0 {
				first = append(first, d)
				counts = append(counts, mask.Count())
			} else {
				warm = append(warm, d)
			}
			if id >= v.Size() || !mask.Has(id) {
				return &exitError{code: 1, err: fmt.Errorf("step %d: token %d (%s) is not in the mask; the grammar expects %s",
					step, id, strconv.Quote(string(v.TokenBytes(id))), m.Expected())}
			}
			if err := m.AcceptToken(id); err != nil {
				return &exitError{code: 1, err: fmt.Errorf("step %d: %w", step, err)}
			}
		}
	}
	if !m.CanEnd() {
		fmt.Fprintf(stderr, "tether mask-bench: note: the grammar cannot end after the input (expects %s)\n", m.Expected())
	}
	slices.Sort(counts)
	out := struct {
		Tokens      int        `json:"tokens"`
		Repeat      int        `json:"repeat"`
		MaskUS      maskStats  `json:"mask_us"`
		FirstPassUS maskStats  `json:"first_pass_mask_us"`
		WarmUS      *maskStats `json:"warm_mask_us,omitempty"`
		CompileMS   float64    `json:"compile_ms"`
		FirstMaskUS float64    `json:"first_mask_us"`
		VocabMS     float64    `json:"vocab_ms"`
		VocabLoadMS float64    `json:"vocab_load_ms"`
		TrieMS      float64    `json:"trie_ms"`
		Allowed     struct {
			Min    int `json:"min"`
			Median int `json:"median"`
			Max    int `json:"max"`
		} `json:"allowed"`
	}{Tokens: len(ids32), Repeat: *repeat, MaskUS: summarizeMasks(times), FirstPassUS: summarizeMasks(first),
		CompileMS: millis(compileDur), VocabMS: millis(loadDur + trieDur), VocabLoadMS: millis(loadDur), TrieMS: millis(trieDur)}
	if len(warm) > 0 {
		w := summarizeMasks(warm)
		out.WarmUS = &w
	}
	if len(first) > 0 {
		out.FirstMaskUS = float64(first[0].Nanoseconds()) / 1e3
	}
	if len(counts) > 0 {
		out.Allowed.Min, out.Allowed.Median, out.Allowed.Max = counts[0], counts[len(counts)/2], counts[len(counts)-1]
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
