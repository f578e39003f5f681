package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/tetherlm/tether/gocore/generate"
	"github.com/tetherlm/tether/gocore/model"
	"github.com/tetherlm/tether/gocore/sampling"
)

func init() {
	register("generate", "generate text with a Hugging Face model directory (optionally constrained)", runGenerate)
}

// runGenerate streams the generated text to stdout (or, with --json, prints one JSON
// object at the end) and the prefill and decode speeds to stderr.
func runGenerate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("generate", stderr)
	dir := fs.String("model", "", "Hugging Face model directory: config.json, *.safetensors, tokenizer.json (required)")
	prompt := fs.String("prompt", "", "prompt text (required)")
	grammarPath := fs.String("grammar", "", "constrain the output with a GBNF grammar file")
	schemaPath := fs.String("json-schema", "", "constrain the output with a JSON Schema file")
	ws := fs.String("whitespace", "bounded", "whitespace a --json-schema output may have between tokens: bounded, compact or flexible (unbounded: a weak model can emit whitespace forever)")
	regex := fs.String("regex", "", "constrain the output to match a regular expression (RE2 syntax)")
	samplers := fs.String("samplers", "", "sampler order, names separated by ';' or letters (llama.cpp's --samplers / --sampling-seq)")
	def := sampling.DefaultParams()
	temp := fs.Float64("temp", float64(def.Temp), "temperature; <= 0 picks the most likely token (greedy)")
	topK := fs.Int("top-k", def.TopK, "top-k (0: off)")
	topP := fs.Float64("top-p", float64(def.TopP), "top-p (1: off)")
	minP := fs.Float64("min-p", float64(def.MinP), "min-p (0: off)")
	repeat := fs.Float64("repeat-penalty", float64(def.PenaltyRepeat), "repetition penalty (1: off)")
	seed := fs.Uint("seed", uint(def.Seed), "random seed (default: random)")
	maxTokens := fs.Int("max-tokens", 128, "stop after this many tokens (<= 0: until an end token or the context ends)")
	ignoreEOG := fs.Bool("ignore-eog", false, "never pick an end-of-generation token (stop at --max-tokens)")
	noSpecial := fs.Bool("no-special", false, "encode the prompt without special tokens (BOS)")
	threads := fs.Int("threads", 0, "goroutines per matrix product (0: GOMAXPROCS)")
	asJSON := fs.Bool("json", false, "print one JSON object (ids, text, stop reason, speeds) instead of streaming text")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	promptSet := false
	fs.Visit(func(f *flag.Flag) { promptSet = promptSet || f.Name == "prompt" })
	if *dir == "" || !promptSet {
		return usageError("--model and --prompt are required")
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
	p := def
	p.Temp, p.TopK, p.TopP, p.MinP = float32(*temp), *topK, float32(*topP), float32(*minP)
	p.PenaltyRepeat, p.Seed = float32(*repeat), uint32(*seed)
	p.Greedy = *temp <= 0
	if *samplers != "" {
		order, err := sampling.ParseOrder(*samplers)
		if err != nil {
			return usageError("--samplers: %v", err)
		}
		p.Samplers = order
	}

	g, err := generate.Load(*dir, model.WithThreads(*threads))
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	defer g.Close()

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
		}{res.PromptIDs, res.IDs, string(res.Text), string(res.Stop), g.Vocab().EOGTokens(),
			res.PrefillTokensPerSecond(), res.DecodeSteps, res.DecodeTokensPerSecond()}
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
