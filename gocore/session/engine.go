package session

import (
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
	"weak"

	"github.com/tetherlm/tether/gocore/tokenmask"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
)

// EngineMatcher adapts an *engine.Matcher to the Matcher interface: FillMask reports
// a limit the engine hit while computing the mask (engine.Matcher.Err) as an error,
// so a mask that is not exact is never used.
type EngineMatcher struct {
	*engine.Matcher
	maxStacks int // the grammar's stack limit, for the error
}

// Clone returns an independent copy.
func (m EngineMatcher) Clone() EngineMatcher {
	return EngineMatcher{Matcher: m.Matcher.Clone(), maxStacks: m.maxStacks}
}

// FillMask fills mask, or clears it and returns the error that kept it from being
// exact: an *engine.LimitError for a limit, an *InternalError for a fault.
func (m EngineMatcher) FillMask(mask tokenmask.Mask) error {
	if err := engineFillMask(m.Matcher, mask, m.maxStacks); err != nil {
		clear(mask)
		return limitError(err, m.maxStacks)
	}
	return nil
}

// AcceptToken advances by one token. A refusal caused by a limit (the engine could not
// follow the token within its stack limit) is an *engine.LimitError, not a rejection:
// the token may well be grammatical.
func (m EngineMatcher) AcceptToken(id int) error {
	return engineAccept(m.Matcher, m.maxStacks, func() error { return m.Matcher.AcceptToken(id) })
}

// AcceptBytes advances by raw text; like AcceptToken, a refusal caused by a limit is an
// *engine.LimitError.
func (m EngineMatcher) AcceptBytes(b []byte) error {
	return engineAccept(m.Matcher, m.maxStacks, func() error { return m.Matcher.AcceptBytes(b) })
}

// IsLimit reports whether err means a limit or an internal fault kept the engine from
// an exact answer (so the caller must not go on as if the grammar had decided).
func IsLimit(err error) bool {
	var le *engine.LimitError
	var ie *InternalError
	return errors.As(err, &le) || errors.As(err, &ie)
}

// FillMask fills mask from m and returns the error that kept the mask from being exact
// (see EngineMatcher.FillMask). Every caller outside this package that needs an exact
// mask from an *engine.Matcher goes through it.
func FillMask(m *engine.Matcher, maxStacks int, mask tokenmask.Mask) error {
	return EngineMatcher{Matcher: m, maxStacks: maxStacks}.FillMask(mask)
}

// InternalError is a fault inside the engine (a recovered panic), not a limit.
type InternalError struct{ Err error }

func (e *InternalError) Error() string { return "tether internal error: " + e.Err.Error() }
func (e *InternalError) Unwrap() error { return e.Err }

// limitError types an engine error: a *engine.LimitError stays as it is; an engine
// error that reports an internal fault becomes an *InternalError; any other (the
// engine's "grammar too ambiguous" message) is the stack limit.
func limitError(err error, maxStacks int) error {
	var le *engine.LimitError
	if errors.As(err, &le) {
		return err
	}
	if strings.Contains(err.Error(), "internal error") {
		return &InternalError{Err: err}
	}
	return &engine.LimitError{Limit: "stacks", Value: maxStacks, Msg: err.Error()}
}

// Spec names a compiled grammar: the same text, root, triggers and limit over the same
// vocabulary compile to the same immutable grammar.
type Spec struct {
	Src       string
	Root      string           // "": "root" for GBNF; <start>, else the first rule, for BNF
	Dialect   string           // "" or "gbnf": llama.cpp's GBNF; "bnf": bnf_sampler's BNF
	Triggers  *engine.Triggers // nil: not lazy
	MaxStacks int              // 0: the engine's default
}

// Grammar is a compiled grammar with what a processor needs to know of how it was made.
type Grammar struct {
	*engine.Grammar
	Spec Spec
}

// NewMatcher returns a matcher at the grammar's start, adapted for sessions.
func (g *Grammar) NewMatcher() EngineMatcher {
	return EngineMatcher{Matcher: g.Grammar.NewMatcher(), maxStacks: g.Spec.MaxStacks}
}

// Compile parses and compiles spec for vocabulary v, reusing a grammar compiled with
// the same spec and vocabulary that is recent or still in use (see compiledCache): a
// processor made per request then reuses the engine's warm per-position token caches
// instead of paying for cold masks again.
// Parse errors are *gbnf.Error, compile errors *engine.CompileError, a limit hit at the
// start state an *engine.LimitError.
//
// parsed, when given, is spec.Src already parsed (with spec.Root as its root, e.g. by
// schema.Grammar), so the text is not parsed a second time; a grammar found in the
// cache is returned without looking at it.
func Compile(v engine.Vocabulary, spec Spec, parsed ...*gbnf.Grammar) (*Grammar, error) {
	switch spec.Dialect {
	case "", "gbnf":
		spec.Dialect = "gbnf"
		if spec.Root == "" {
			spec.Root = "root"
		}
	case "bnf": // an empty root: <start>, else the first production
	default:
		return nil, fmt.Errorf("unknown grammar dialect %q: expected \"gbnf\" or \"bnf\"", spec.Dialect)
	}
	if spec.MaxStacks <= 0 {
		spec.MaxStacks = engineDefaultMaxStacks
	}
	key := cacheKey{v: v, src: maphash.String(srcSeed, spec.Src), srcLen: len(spec.Src), root: spec.Root, dialect: spec.Dialect, maxStacks: spec.MaxStacks}
	if t := spec.Triggers; t != nil {
		key.lazy = true
		key.triggers = strings.Join([]string{
			strings.Join(t.Words, "\x00"), strings.Join(t.Patterns, "\x00"),
			strings.Join(t.PatternsAtStart, "\x00"), t.After, intsKey(t.Tokens),
			strings.Join(t.PatternsFull, "\x00"), strings.Join(t.PreservedTokens, "\x00"),
		}, "\x01")
	}
	if g := compiled.get(key); g != nil && g.Spec.Src == spec.Src {
		return g, nil
	}
	var pg *gbnf.Grammar
	if len(parsed) > 0 && parsed[0] != nil {
		pg = parsed[0]
	} else {
		parse := gbnf.Parse
		if spec.Dialect == "bnf" {
			parse = gbnf.ParseBNF
		}
		var err error
		if pg, err = parse(spec.Src, gbnf.WithRoot(spec.Root)); err != nil {
			return nil, err
		}
	}
	opts := []engine.Option{engine.WithMaxStacks(spec.MaxStacks)}
	if spec.Triggers != nil {
		opts = append(opts, engine.WithLazy(*spec.Triggers))
	}
	eg, err := engine.Compile(pg, v, opts...)
	if err != nil {
		var ce *engine.CompileError
		if !errors.As(err, &ce) {
			err = limitError(err, spec.MaxStacks)
		}
		return nil, err
	}
	g := &Grammar{Grammar: eg, Spec: spec}
	compiled.put(key, g)
	return g, nil
}

func intsKey(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(strconv.Itoa(id))
		b.WriteByte(',')
	}
	return b.String()
}

// cacheKey identifies a spec in the compiled-grammar cache. The source text is
// held as its hash and length (a Kubernetes schema's grammar is hundreds of KB:
// hashed once per Compile, not at every map operation, and not kept alive by
// the weak entries of grammars already collected); a hit is checked against
// the grammar's own Spec.Src.
type cacheKey struct {
	v              engine.Vocabulary
	src            uint64 // maphash of Spec.Src
	srcLen         int
	root, triggers string
	dialect        string
	lazy           bool
	maxStacks      int
}

// srcSeed seeds cacheKey.src.
var srcSeed = maphash.MakeSeed()

// compiledCache finds a compiled grammar by its spec. It holds the
// compiledCacheSize most recently used grammars strongly; any other grammar it
// made stays findable, through a weak pointer, for as long as something else
// (a caller's Grammar, a matcher) keeps it alive. A process that compiles many
// distinct grammars (a server, one schema per request) so retains a few, not
// all it has seen: Kubernetes-sized grammars hold megabytes each with their
// token caches, and every garbage collection marks what is retained.
type compiledCache struct {
	mu    sync.Mutex
	order []cacheKey // held strongly, least recently used first
	items map[cacheKey]*Grammar
	weak  map[cacheKey]weak.Pointer[Grammar]
	// sweepAt is the weak map's size at which put next drops the entries
	// whose grammar has been collected
	sweepAt int
}

// compiledCacheSize is the number of grammars the cache holds strongly.
const compiledCacheSize = 4

// weakSweepFrom is the smallest size at which put drops the weak entries whose
// grammar has been collected; after a sweep, the next waits until the map has
// doubled, so sweeping costs O(1) per put.
const weakSweepFrom = 64

var compiled = newCompiledCache()

func newCompiledCache() *compiledCache {
	return &compiledCache{items: map[cacheKey]*Grammar{}, weak: map[cacheKey]weak.Pointer[Grammar]{}}
}

func (c *compiledCache) get(k cacheKey) *Grammar {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.items[k]
	if g == nil {
		w, ok := c.weak[k]
		if !ok {
			return nil
		}
		if g = w.Value(); g == nil {
			delete(c.weak, k)
			return nil
		}
		c.hold(k, g) // used again: held strongly as the most recent
		return g
	}
	c.touch(k)
	return g
}

func (c *compiledCache) put(k cacheKey, g *Grammar) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.weak) >= max(c.sweepAt, weakSweepFrom) {
		for wk, w := range c.weak {
			if w.Value() == nil {
				delete(c.weak, wk)
			}
		}
		c.sweepAt = 2 * len(c.weak)
	}
	c.weak[k] = weak.Make(g)
	c.hold(k, g)
}

// hold makes g the most recently used of the strongly held grammars, letting
// go of the least recently used one past compiledCacheSize (it stays in the
// weak map).
func (c *compiledCache) hold(k cacheKey, g *Grammar) {
	if _, ok := c.items[k]; !ok && len(c.order) >= compiledCacheSize {
		delete(c.items, c.order[0])
		c.order = c.order[1:]
	}
	c.items[k] = g
	c.touch(k)
}

func (c *compiledCache) touch(k cacheKey) {
	for i, o := range c.order {
		if o == k {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	c.order = append(c.order, k)
}
