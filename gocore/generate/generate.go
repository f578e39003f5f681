package generate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/model"
	"github.com/tetherlm/tether/gocore/sampling"
	"github.com/tetherlm/tether/gocore/schema"
	"github.com/tetherlm/tether/gocore/tokenizer"
	"github.com/tetherlm/tether/gocore/tokenmask"
	"github.com/tetherlm/tether/gocore/vocab"
	"gorgonia.org/tensor"
)

// Generator is a model with its tokenizer and vocabulary. Generate may be called
// repeatedly, but by one goroutine at a time.
type Generator struct {
	model *model.Model
	tok   *tokenizer.Tokenizer
	vocab *vocab.Vocab
	state *model.State
	owned bool // Close closes the model and tokenizer
}

// Load opens a Hugging Face model directory: config.json and the safetensors weights
// (gocore/model), tokenizer.json, and the end-of-generation set from
// tokenizer_config.json, generation_config.json and config.json where present.
func Load(dir string, opts ...model.Option) (*Generator, error) {
	tokPath := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(tokPath); err != nil {
		return nil, fmt.Errorf("generate: %v (the model directory needs its tokenizer.json)", err)
	}
	var vopts []vocab.Option
	for _, f := range []struct {
		name string
		opt  func([]byte) vocab.Option
	}{{"tokenizer_config.json", vocab.WithTokenizerConfig}, {"generation_config.json", vocab.WithGenerationConfig},
		{"config.json", vocab.WithModelConfig}} {
		data, err := os.ReadFile(filepath.Join(dir, f.name))
		if err == nil {
			vopts = append(vopts, f.opt(data))
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("generate: %v", err)
		}
	}
	v, err := vocab.LoadFile(tokPath, vopts...)
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	m, err := model.Load(dir, opts...)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.FromFile(tokPath)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("generate: %w", err)
	}
	g, err := New(m, tok, v)
	if err != nil {
		tok.Close()
		m.Close()
		return nil, err
	}
	g.owned = true
	return g, nil
}

// New puts together a loaded model, tokenizer and vocabulary (which must describe the
// same token ids). On an accelerator engine (a model.StepEngine) it runs Model.Warm,
// so the first Generate's prefill time is not its one-time costs. Close does not
// close what New was given.
func New(m *model.Model, tok *tokenizer.Tokenizer, v *vocab.Vocab) (*Generator, error) {
	if n := m.Config().VocabSize; v.Size() > n {
		return nil, fmt.Errorf("generate: the tokenizer has %d tokens but the model's vocab_size is %d", v.Size(), n)
	}
	g := &Generator{model: m, tok: tok, vocab: v, state: m.NewState()}
	// An accelerator engine (a StepEngine: CUDA) pays its one-time costs now, not in the
	// first prefill Generate times.
	if _, ok := m.Engine().(model.StepEngine); ok {
		if err := m.Warm(g.state); err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
	}
	return g, nil
}

// Model returns the generator's model.
func (g *Generator) Model() *model.Model { return g.model }

// Vocab returns the generator's vocabulary.
func (g *Generator) Vocab() *vocab.Vocab { return g.vocab }

// Tokenizer returns the generator's tokenizer.
func (g *Generator) Tokenizer() *tokenizer.Tokenizer { return g.tok }

// Close releases the model and tokenizer if Load opened them.
func (g *Generator) Close() error {
	if !g.owned {
		return nil
	}
	g.owned = false
	return errors.Join(g.tok.Close(), g.model.Close())
}

// Constraint restricts the generated text; at most one field may be set.
type Constraint struct {
	GBNF       string // a GBNF grammar (root rule "root")
	JSONSchema []byte // a JSON Schema; the output is a JSON value it accepts
	Regex      string // a regular expression (Go/RE2 syntax) the whole output must match
	// SchemaOptions adjust the JSON Schema conversion (e.g. schema.WithWhitespace).
	SchemaOptions []schema.Option
	// Root names the GBNF start rule ("" = "root"; like llama.cpp's grammar_root).
	Root string
	// Lazy, if set, makes the constraint a lazy grammar: unconstrained until one of
	// its triggers fires (llama.cpp's grammar_lazy and grammar_triggers, plus
	// preserved_tokens; see engine.Triggers).
	Lazy *engine.Triggers
}

func (c Constraint) empty() bool { return c.GBNF == "" && c.JSONSchema == nil && c.Regex == "" }

// Options configures one Generate call. The zero value samples with llama.cpp's
// default chain, unconstrained, until an end-of-generation token or the context ends.
type Options struct {
	// Sampling is the sampler chain's parameters; nil means sampling.DefaultParams().
	// NVocab and NCtx are filled in from the model when zero.
	Sampling *sampling.Params
	// Constraint is an optional grammar, JSON Schema or regular expression.
	Constraint Constraint
	// MaxTokens stops after this many generated tokens (<= 0: no limit but the context).
	MaxTokens int
	// IgnoreEOG never picks an end-of-generation token (their logits are set to -Inf),
	// like llama.cpp's --ignore-eos; generation then stops at MaxTokens.
	IgnoreEOG bool
	// NoSpecial encodes the prompt without the tokenizer's special tokens (e.g. BOS).
	NoSpecial bool
	// OnToken, if set, is called with each generated token as soon as it is chosen; an
	// error stops generation and is returned.
	OnToken func(Token) error
}

// Token is one generated token.
type Token struct {
	Index int    // 0 for the first generated token
	ID    int    // token id
	Bytes []byte // the exact bytes it adds to the text (empty for special tokens); valid during the call
	EOG   bool   // it ends generation (it is not added to the text)
}

// StopReason says why generation ended.
type StopReason string

// Why generation stops.
const (
	StopEOG       StopReason = "eog"        // an end-of-generation token was picked
	StopMaxTokens StopReason = "max_tokens" // Options.MaxTokens reached
	StopContext   StopReason = "context"    // the model's max_position_embeddings reached
	StopGrammar   StopReason = "grammar"    // the constraint allows no further token
)

// Result is what Generate produced.
type Result struct {
	PromptIDs      []int         // the encoded prompt
	IDs            []int         // generated token ids (the final end-of-generation token included)
	Text           []byte        // the exact bytes of the generated tokens (special tokens add none)
	Stop           StopReason    // why it ended
	PrefillTime    time.Duration // the prompt's forward pass and the first sample
	DecodeTime     time.Duration // the single-token steps: forward pass, sampling, grammar
	DecodeSteps    int           // single-token forward passes
	SamplerWarning []string      // warnings from building the sampler chain
}

// PrefillTokensPerSecond is the prompt length over PrefillTime.
func (r *Result) PrefillTokensPerSecond() float64 {
	return perSecond(len(r.PromptIDs), r.PrefillTime)
}

// DecodeTokensPerSecond is DecodeSteps over DecodeTime.
func (r *Result) DecodeTokensPerSecond() float64 { return perSecond(r.DecodeSteps, r.DecodeTime) }

func perSecond(n int, d time.Duration) float64 {
	if n == 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Generate encodes prompt and generates a continuation.
func (g *Generator) Generate(ctx context.Context, prompt string, opts Options) (*Result, error) {
	ids32, err := g.tok.Encode(prompt, !opts.NoSpecial)
	if err != nil {
		return nil, fmt.Errorf("generate: encoding the prompt: %w", err)
	}
	ids := make([]int, len(ids32))
	for i, id := range ids32 {
		ids[i] = int(id)
	}
	return g.GenerateIDs(ctx, ids, opts)
}

// Matcher compiles a constraint against the generator's vocabulary; nil when c is empty.
func (g *Generator) Matcher(c Constraint) (*engine.Matcher, error) {
	if c.empty() {
		return nil, nil
	}
	set := 0
	var src, what string
	if c.GBNF != "" {
		set++
		src, what = c.GBNF, "grammar"
	}
	if c.JSONSchema != nil {
		set++
		s, _, err := schema.FromJSONSchema(c.JSONSchema, c.SchemaOptions...)
		if err != nil {
			return nil, fmt.Errorf("generate: JSON Schema: %w", err)
		}
		src, what = s, "JSON Schema"
	}
	if c.Regex != "" {
		set++
		s, err := schema.FromRegex(c.Regex)
		if err != nil {
			return nil, fmt.Errorf("generate: regex: %w", err)
		}
		src, what = s, "regex"
	}
	if set > 1 {
		return nil, errors.New("generate: give one of a grammar, a JSON Schema and a regex, not several")
	}
	var popts []gbnf.Option
	var copts []engine.Option
	if c.Root != "" {
		popts = append(popts, gbnf.WithRoot(c.Root))
	}
	if c.Lazy != nil {
		copts = append(copts, engine.WithLazy(*c.Lazy))
	}
	gr, err := gbnf.Parse(src, popts...)
	if err != nil {
		return nil, fmt.Errorf("generate: %s: %w", what, err)
	}
	cg, err := engine.Compile(gr, g.vocab, copts...)
	if err != nil {
		return nil, fmt.Errorf("generate: %s: %w", what, err)
	}
	return cg.NewMatcher(), nil
}

// GenerateIDs generates a continuation of already-encoded prompt ids.
func (g *Generator) GenerateIDs(ctx context.Context, prompt []int, opts Options) (*Result, error) {
	if len(prompt) == 0 {
		return nil, errors.New("generate: empty prompt (no tokens)")
	}
	cfg := g.model.Config()
	p := sampling.DefaultParams()
	if opts.Sampling != nil {
		p = *opts.Sampling
	}
	if p.NVocab == 0 {
		p.NVocab = cfg.VocabSize
	}
	if p.NCtx == 0 {
		p.NCtx = cfg.MaxPositions
	}
	if p.DryVocab == nil {
		p.DryVocab = g.vocab
	}
	matcher, err := g.Matcher(opts.Constraint)
	if err != nil {
		return nil, err
	}
	var gram sampling.Grammar
	if matcher != nil {
		gram = matcher
	}
	sess, warns, err := sampling.NewSessionFromParams(p, gram)
	if err != nil {
		return nil, fmt.Errorf("generate: sampling: %w", err)
	}
	// Like llama.cpp, the prompt goes into the samplers' history (penalties, DRY), not
	// into the grammar.
	for _, id := range prompt {
		sess.Chain().Accept(id)
	}
	res := &Result{PromptIDs: append([]int(nil), prompt...), SamplerWarning: warns}
	eog := g.vocab.EOGTokens()

	// Unconstrained greedy decoding picks where the logits are (on a GPU engine only
	// the id comes back): the same pick as the session's argmax, end tokens excluded
	// by a mask under IgnoreEOG.
	greedy := matcher == nil && sess.PicksArgmax()
	var allowed tokenmask.Mask
	if greedy && opts.IgnoreEOG {
		allowed = tokenmask.New(cfg.VocabSize)
		allowed.Fill(cfg.VocabSize)
		for _, id := range eog {
			allowed.Unset(id)
		}
	}
	st := g.state
	st.Reset()
	// forward runs ids: the greedy pick in pick, or the logits in logits.
	var logits *tensor.Dense
	pick := -1
	forward := func(ids []int) (err error) {
		if greedy {
			pick, err = g.model.ForwardArgmax(st, ids, allowed)
		} else {
			logits, err = g.model.Forward(st, ids)
		}
		return err
	}
	t0 := time.Now()
	stepStart := t0
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if err := forward(prompt); err != nil {
		return res, err
	}
	for step := 0; ; step++ {
		id := pick
		if !greedy {
			row := logits.Float32s()
			if opts.IgnoreEOG {
				for _, id := range eog {
					if id < len(row) {
						row[id] = float32(math.Inf(-1))
					}
				}
			}
			if id, err = sess.Sample(row); err != nil {
				if errors.Is(err, sampling.ErrGrammarRejectsAll) {
					res.Stop = StopGrammar
					break
				}
				return res, fmt.Errorf("generate: sampling token %d: %w", step, err)
			}
		} else if id < 0 {
			return res, fmt.Errorf("generate: sampling token %d: every token is an end token and ignore-EOG is set", step)
		}
		if err := sess.Accept(id); err != nil {
			return res, fmt.Errorf("generate: token %d (id %d): %w", step, id, err)
		}
		res.IDs = append(res.IDs, id)
		isEOG := g.vocab.IsEOG(id)
		tb := g.vocab.TokenBytes(id)
		if !isEOG {
			res.Text = append(res.Text, tb...)
		}
		if step == 0 {
			res.PrefillTime = time.Since(t0)
		} else {
			res.DecodeTime += time.Since(stepStart)
		}
		if opts.OnToken != nil {
			if err := opts.OnToken(Token{Index: step, ID: id, Bytes: tb, EOG: isEOG}); err != nil {
				return res, err
			}
		}
		switch {
		case isEOG:
			res.Stop = StopEOG
		case opts.MaxTokens > 0 && len(res.IDs) >= opts.MaxTokens:
			res.Stop = StopMaxTokens
		case cfg.MaxPositions > 0 && st.Pos() >= cfg.MaxPositions:
			res.Stop = StopContext
		}
		if res.Stop != "" {
			break
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		stepStart = time.Now()
		if err := forward([]int{id}); err != nil {
			return res, err
		}
		res.DecodeSteps++
	}
	return res, nil
}
