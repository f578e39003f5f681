package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/generate"
	"github.com/tetherlm/tether/gocore/model"
	"github.com/tetherlm/tether/gocore/sampling"
	"github.com/tetherlm/tether/gocore/vocab"
)

func init() {
	register("generate", "generate text with a Hugging Face model directory (optionally constrained)", runGenerate)
}

// runGenerate streams the generated text to stdout (or, with --json, prints one JSON
// object at the end) and the prefill and decode speeds to stderr.
func runGenerate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("generate", stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tether generate --model DIR --prompt TEXT [flags]\n"+
			"       tether generate --model DIR --chat [--system TEXT] --user TEXT [--assistant TEXT --user TEXT ...] [flags]\n"+
			"       tether generate --logits FILE --n-vocab N [--tokenizer tokenizer.json] [sampler flags]\n\n"+
			"Sampler flags carry llama.cpp's names and defaults; the chain is logit-bias, then --samplers\n"+
			"in order, then dist (mirostat 1 or 2 replaces the middle). Flags:")
		printFlags(stderr, fs)
	}
	dir := fs.String("model", "", "Hugging Face model directory: config.json, *.safetensors, tokenizer.json (required unless --logits); architectures: "+strings.Join(model.SupportedArchitectures(), ", "))
	prompt := fs.String("prompt", "", "prompt text (required with --model, unless --chat)")
	cf := addChatFlags(fs, true)
	grammarPath := fs.String("grammar", "", "constrain the output with a GBNF grammar file")
	root := fs.String("root", "root", "the grammar's start rule")
	schemaPath := fs.String("json-schema", "", "constrain the output with a JSON Schema file")
	ws := fs.String("whitespace", "bounded", "whitespace a --json-schema output may have between tokens: bounded, compact or flexible (unbounded: a weak model can emit whitespace forever)")
	regex := fs.String("regex", "", "constrain the output to match a regular expression (RE2 syntax)")
	var lazy lazyFlags
	fs.Var(&lazy.words, "grammar-trigger-word", "lazy grammar: start constraining at this word, which the grammar must describe (repeatable)")
	fs.Var(&lazy.patterns, "grammar-trigger-pattern", "lazy grammar: start at the first match of this regex (RE2) anywhere in the output (repeatable)")
	fs.Var(&lazy.full, "grammar-trigger-pattern-full", "lazy grammar: start when this regex matches the whole output; the constrained text begins at its first non-empty group (repeatable)")
	fs.Var(&lazy.tokens, "grammar-trigger-token", "lazy grammar: start at this token, by id or as written in the tokenizer, e.g. <|python_tag|> (repeatable)")
	fs.Var(&lazy.preserved, "preserved-token", "lazy grammar: a special token, as written in the tokenizer, that the grammar and the triggers take as its text (repeatable)")
	after := fs.String("after", "", "lazy grammar: constrain only the text after this marker (e.g. </think>)")
	p := sampling.DefaultParams()
	sampling.RegisterFlags(fs, &p)
	maxTokens := fs.Int("max-tokens", 128, "stop after this many tokens (<= 0: until an end token or the context ends)")
	ignoreEOG := fs.Bool("ignore-eog", false, "never pick an end-of-generation token (stop at --max-tokens)")
	noSpecial := fs.Bool("no-special", false, "encode the prompt without special tokens (BOS)")
	mf := addModelFlags(fs, "goroutines per matrix product (0: GOMAXPROCS)")
	asJSON := fs.Bool("json", false, "print one JSON object (ids, text, stop reason, speeds) instead of streaming text")
	logitsPath := fs.String("logits", "", "sample from recorded logits instead of a model: little-endian float32 rows of --n-vocab values, one row per step; prints {\"ids\": [...]}")
	tokPath := fs.String("tokenizer", "", "with --logits: a tokenizer.json, to tokenize DRY sequence breakers")
	promptIDs := fs.String("prompt-ids", "", "with --logits: comma-separated prompt token ids, for the samplers' history (penalties, DRY)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *logitsPath != "" {
		return replayLogits(*logitsPath, *tokPath, *promptIDs, p, stdout, stderr)
	}
	promptSet := false
	fs.Visit(func(f *flag.Flag) { promptSet = promptSet || f.Name == "prompt" })
	if *dir == "" || promptSet == cf.enabled() {
		return usageError("--model and one of --prompt and --chat are required")
	}
	var c generate.Constraint
	n := 0
	if *grammarPath != "" {
		data, err := readInput(*grammarPath)
		if err != nil {
			return usageError("--grammar: %v", err)
		}
		c.GBNF, n = string(data), n+1
	}
	if *schemaPath != "" {
		data, err := readInput(*schemaPath)
		if err != nil {
			return usageError("--json-schema: %v", err)
		}
		c.JSONSchema, n = data, n+1
		opts, err := schemaOptions(*ws, false, false, false)
		if err != nil {
			return err
		}
		c.SchemaOptions = opts
	}
	if *regex != "" {
		c.Regex, n = *regex, n+1
	}
	if n > 1 {
		return usageError("give at most one of --grammar, --json-schema and --regex")
	}
	if *root != "root" {
		c.Root = *root
	}
	if lazy.any() || *after != "" {
		if n == 0 {
			return usageError("lazy grammar flags need --grammar, --json-schema or --regex")
		}
		c.Lazy = &engine.Triggers{Words: lazy.words, Patterns: lazy.patterns, PatternsFull: lazy.full,
			After: *after, PreservedTokens: lazy.preserved}
	} else if len(lazy.preserved) > 0 {
		return usageError("--preserved-token applies to lazy grammars: give a --grammar-trigger-* flag or --after")
	}

	if cf.enabled() { // the template writes the special tokens: encode without adding them, as transformers does
		text, err := chatPrompt(*dir, cf)
		if err != nil {
			return err
		}
		*prompt, *noSpecial = text, true
	}
	mopts, release, err := mf.options()
	if err != nil {
		return err
	}
	defer release()
	g, err := generate.Load(*dir, mopts...)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	defer g.Close()
	if c.Lazy != nil {
		for _, t := range lazy.tokens {
			id, err := tokenArg(g.Vocab(), t)
			if err != nil {
				return usageError("--grammar-trigger-token: %v", err)
			}
			c.Lazy.Tokens = append(c.Lazy.Tokens, id)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opts := generate.Options{Sampling: &p, Constraint: c, MaxTokens: *maxTokens, IgnoreEOG: *ignoreEOG, NoSpecial: *noSpecial}
	if !*asJSON {
		opts.OnToken = func(t generate.Token) error {
			if t.EOG || len(t.Bytes) == 0 {
				return nil
			}
			_, err := stdout.Write(t.Bytes)
			return err
		}
	}
	res, err := g.Generate(ctx, *prompt, opts)
	for _, w := range resWarnings(res) {
		fmt.Fprintf(stderr, "tether generate: warning: %s\n", w)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "\ntether generate: interrupted")
		}
		return err
	}
	if *asJSON {
		out := struct {
			PromptIDs   []int   `json:"prompt_ids"`
			IDs         []int   `json:"ids"`
			Text        string  `json:"text"`
			Stop        string  `json:"stop"`
			EOGIDs      []int   `json:"eog_ids"`
			PrefillTokS float64 `json:"prefill_tok_s"`
			DecodeSteps int     `json:"decode_steps"`
			DecodeTokS  float64 `json:"decode_tok_s"`
			Engine      string  `json:"engine"`
		}{res.PromptIDs, res.IDs, string(res.Text), string(res.Stop), g.Vocab().EOGTokens(),
			res.PrefillTokensPerSecond(), res.DecodeSteps, res.DecodeTokensPerSecond(), g.Model().Engine().Name()}
		if out.IDs == nil {
			out.IDs = []int{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stderr, "prefill: %d tokens in %.1f ms (%.1f tok/s); decode: %d tokens in %.1f ms (%.1f tok/s); stop: %s; engine: %s\n",
		len(res.PromptIDs), ms(res.PrefillTime.Seconds()), res.PrefillTokensPerSecond(),
		res.DecodeSteps, ms(res.DecodeTime.Seconds()), res.DecodeTokensPerSecond(), res.Stop, g.Model().Engine().Name())
	return nil
}

func ms(sec float64) float64 { return sec * 1e3 }

func resWarnings(r *generate.Result) []string {
	if r == nil {
		return nil
	}
	return r.SamplerWarning
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// lazyFlags collects the lazy-grammar trigger flags.
type lazyFlags struct {
	words, patterns, full, tokens, preserved stringList
}

func (l *lazyFlags) any() bool {
	return len(l.words)+len(l.patterns)+len(l.full)+len(l.tokens) > 0
}

// tokenArg reads a token given by id or as written in the tokenizer.
func tokenArg(v *vocab.Vocab, s string) (int, error) {
	if id, err := strconv.Atoi(s); err == nil {
		if id < 0 || id >= v.Size() {
			return 0, fmt.Errorf("token id %d is outside the vocabulary (size %d)", id, v.Size())
		}
		return id, nil
	}
	if id, ok := v.TokenID(s); ok {
		return id, nil
	}
	return 0, fmt.Errorf("%q is neither a token id nor a token of the tokenizer", s)
}

// replayLogits samples from recorded logits rows instead of a model: the chain built
// from p picks a token per row and accepts it, as generate does, and the ids are
// printed as one JSON object {"ids": [...], "chain": "..."}. It shows that the CLI,
// gocore/sampling and Python pick the same tokens for the same logits and seed.
func replayLogits(path, tokPath, promptIDs string, p sampling.Params, stdout, stderr io.Writer) error {
	if p.NVocab <= 0 {
		return usageError("--logits needs --n-vocab (the width of a row)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return usageError("--logits: %v", err)
	}
	row := 4 * p.NVocab
	if len(data)%row != 0 {
		return usageError("--logits: %d bytes is not a whole number of rows of %d float32", len(data), p.NVocab)
	}
	if tokPath != "" {
		v, err := vocab.LoadFile(tokPath)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		p.DryVocab = v
	}
	var prompt []int
	if promptIDs != "" {
		if prompt, err = parseIDs(promptIDs); err != nil {
			return usageError("--prompt-ids: %v", err)
		}
	}
	sess, warns, err := sampling.NewSessionFromParams(p, nil)
	if err != nil {
		return usageError("%v", err)
	}
	for _, w := range warns {
		fmt.Fprintf(stderr, "tether generate: warning: %s\n", w)
	}
	for _, id := range prompt {
		sess.Chain().Accept(id)
	}
	logits := make([]float32, p.NVocab)
	ids := []int{}
	for off := 0; off < len(data); off += row {
		for i := range logits {
			logits[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[off+4*i:]))
		}
		id, err := sess.Sample(logits)
		if err != nil {
			return fmt.Errorf("step %d: %w", len(ids), err)
		}
		if err := sess.Accept(id); err != nil {
			return fmt.Errorf("step %d: %w", len(ids), err)
		}
		ids = append(ids, id)
	}
	return json.NewEncoder(stdout).Encode(map[string]any{"ids": ids, "chain": sess.Chain().String()})
}

// printFlags lists every flag with its default, the empty ones included.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			kind = ""
		}
		def := f.DefValue
		if def == "" {
			def = `""`
		}
		fmt.Fprintf(w, "  --%s %s\n    \t%s (default: %s)\n", f.Name, kind, usage, def)
	})
}

const weightsHelp = "how weight matrices are held: \"\" as stored (f32, or bf16 for bf16 checkpoints), or int8 " +
	"(quantized at load in blocks of 32 with one scale each, as llama.cpp's Q8_0: a quarter of f32's memory, " +
	"faster decode; an approximation, logits differ slightly from the f32 model's)"

// weightsOption adds the model option of a --weights value.
func weightsOption(mopts []model.Option, v string) ([]model.Option, error) {
	switch v {
	case "":
		return mopts, nil
	case "int8":
		return append(mopts, model.WithInt8Weights()), nil
	}
	return nil, usageError("--weights %q: want int8 (or nothing for the weights as stored)", v)
}
