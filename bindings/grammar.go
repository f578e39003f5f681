package bindings

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/safecall"
	"github.com/tetherlm/tether/gocore/vocab"
)

var (
	vocabs   = newRegistry[*vocab.Vocab]("vocabulary")
	grammars = newRegistry[*engine.Grammar]("grammar")
	matchers = newRegistry[*engine.Matcher]("matcher")
)

// VocabFromJSON loads a vocabulary from the text of a tokenizer.json. configJSON is a
// tokenizer_config.json (or "" / "{}"); eogJSON is a JSON list of extra
// end-of-generation token ids (or ""). Loading the same inputs twice reuses the vocabulary.
func VocabFromJSON(tokenizerJSON, configJSON, eogJSON string) (int64, error) {
	return safecall.Do("VocabFromJSON", func() (int64, error) {
		var opts []vocab.Option
		if configJSON != "" && configJSON != "{}" {
			opts = append(opts, vocab.WithTokenizerConfig([]byte(configJSON)))
		}
		if eogJSON != "" {
			var ids []int
			if err := json.Unmarshal([]byte(eogJSON), &ids); err != nil {
				return 0, fmt.Errorf("end-of-generation ids: want a JSON list of ints: %v", err)
			}
			opts = append(opts, vocab.WithEOGIDs(ids...))
		}
		v, err := vocab.Load([]byte(tokenizerJSON), opts...)
		if err != nil {
			return 0, err
		}
		return vocabs.add(v), nil
	})
}

// VocabEOG lists the vocabulary's end-of-generation token ids as a JSON list.
func VocabEOG(h int64) (string, error) {
	return safecall.Do("VocabEOG", func() (string, error) {
		v, err := vocabs.get(h)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(v.EOGTokens())
		return string(b), err
	})
}

// VocabSize is the number of token ids the tokenizer defines.
func VocabSize(h int64) (int, error) {
	return safecall.Do("VocabSize", func() (int, error) {
		v, err := vocabs.get(h)
		if err != nil {
			return 0, err
		}
		return v.Size(), nil
	})
}

// VocabClose releases the handle (the vocabulary itself stays cached for reuse).
func VocabClose(h int64) (bool, error) {
	return safecall.Do("VocabClose", func() (bool, error) {
		_, err := vocabs.remove(h)
		return err == nil, err
	})
}

// triggerSpec is the JSON form of engine.Triggers that python/tether sends.
type triggerSpec struct {
	Words           []string `json:"words"`
	Tokens          []int    `json:"tokens"`
	Patterns        []string `json:"patterns"`
	PatternsAtStart []string `json:"patterns_at_start"`
	PatternsFull    []string `json:"patterns_full"`
	After           string   `json:"after"`
	PreservedTokens []string `json:"preserved_tokens"`
}

// GrammarCompile parses GBNF text and compiles it for a vocabulary. root names the
// start rule; triggersJSON ("" for none) makes the grammar lazy.
func GrammarCompile(vocabHandle int64, src, root, triggersJSON string) (int64, error) {
	return safecall.Do("GrammarCompile", func() (int64, error) {
		v, err := vocabs.get(vocabHandle)
		if err != nil {
			return 0, err
		}
		if root == "" {
			root = "root"
		}
		g, err := gbnf.Parse(src, gbnf.WithRoot(root))
		if err != nil {
			return 0, grammarError(err)
		}
		var opts []engine.Option
		if triggersJSON != "" {
			var t triggerSpec
			if err := json.Unmarshal([]byte(triggersJSON), &t); err != nil {
				return 0, fmt.Errorf("triggers: %v", err)
			}
			opts = append(opts, engine.WithLazy(engine.Triggers{
				Tokens: t.Tokens, Words: t.Words, Patterns: t.Patterns,
				PatternsAtStart: t.PatternsAtStart, PatternsFull: t.PatternsFull, After: t.After,
				PreservedTokens: t.PreservedTokens,
			}))
		}
		key := compiledKey{v, src, root, triggersJSON}
		cg := compiled.get(key)
		if cg == nil {
			if cg, err = engine.Compile(g, v, opts...); err != nil {
				return 0, grammarError(err)
			}
			compiled.put(key, cg)
		}
		return grammars.add(cg), nil
	})
}

// compiledKey names a compiled grammar: the same text, root and triggers over the same
// vocabulary compile to the same immutable Grammar.
type compiledKey struct {
	v                       *vocab.Vocab
	src, root, triggersJSON string
}

// compiledCache keeps recently compiled grammars, so a processor made again for the same
// grammar (one per request is common) reuses the engine's warm per-position token caches
// instead of paying for cold masks again.
type compiledCache struct {
	mu    sync.Mutex
	order []compiledKey // least recently used first
	items map[compiledKey]*engine.Grammar
}

const compiledCacheSize = 32

var compiled = &compiledCache{items: map[compiledKey]*engine.Grammar{}}

func (c *compiledCache) get(k compiledKey) *engine.Grammar {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.items[k]
	if g != nil {
		c.touch(k)
	}
	return g
}

func (c *compiledCache) put(k compiledKey, g *engine.Grammar) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; !ok && len(c.order) >= compiledCacheSize {
		delete(c.items, c.order[0])
		c.order = c.order[1:]
	}
	c.items[k] = g
	c.touch(k)
}

func (c *compiledCache) touch(k compiledKey) {
	for i, o := range c.order {
		if o == k {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	c.order = append(c.order, k)
}

// GrammarClose releases a compiled grammar (matchers made from it keep working).
func GrammarClose(h int64) (bool, error) {
	return safecall.Do("GrammarClose", func() (bool, error) {
		_, err := grammars.remove(h)
		return err == nil, err
	})
}

// MatcherNew starts a matcher at the beginning of a compiled grammar.
func MatcherNew(grammarHandle int64) (int64, error) {
	return safecall.Do("MatcherNew", func() (int64, error) {
		g, err := grammars.get(grammarHandle)
		if err != nil {
			return 0, err
		}
		return matchers.add(g.NewMatcher()), nil
	})
}

// MatcherAcceptToken advances the matcher by one token; an error says why it is not allowed.
func MatcherAcceptToken(h int64, id int) (bool, error) {
	return safecall.Do("MatcherAcceptToken", func() (bool, error) {
		m, err := matchers.get(h)
		if err != nil {
			return false, err
		}
		return true, m.AcceptToken(id)
	})
}

// MatcherAcceptText advances the matcher by the UTF-8 bytes of text.
func MatcherAcceptText(h int64, text string) (bool, error) {
	return safecall.Do("MatcherAcceptText", func() (bool, error) {
		m, err := matchers.get(h)
		if err != nil {
			return false, err
		}
		return true, m.AcceptBytes([]byte(text))
	})
}

// MatcherFillMask writes the allowed-token bitset (words uint32 values) into the
// caller's buffer and returns the number of allowed tokens.
func MatcherFillMask(h int64, mask uintptr, words int) (int, error) {
	return safecall.Do("MatcherFillMask", func() (int, error) {
		m, err := matchers.get(h)
		if err != nil {
			return 0, err
		}
		dst, err := view[uint32](mask, words, "mask")
		if err != nil {
			return 0, err
		}
		if err := m.FillMask(dst); err != nil {
			return 0, err
		}
		return popcount(dst), nil
	})
}

// MatcherState reports the matcher's state as a JSON object {can_end, dead, awaiting}.
func MatcherState(h int64) (string, error) {
	return safecall.Do("MatcherState", func() (string, error) {
		m, err := matchers.get(h)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf(`{"can_end":%t,"dead":%t,"awaiting":%t}`, m.CanEnd(), m.IsDead(), m.Awaiting()), nil
	})
}

// MatcherClone copies a matcher; the copy advances independently.
func MatcherClone(h int64) (int64, error) {
	return safecall.Do("MatcherClone", func() (int64, error) {
		m, err := matchers.get(h)
		if err != nil {
			return 0, err
		}
		return matchers.add(m.Clone()), nil
	})
}

// MatcherReset puts the matcher back at the start of its grammar.
func MatcherReset(h int64) (bool, error) {
	return safecall.Do("MatcherReset", func() (bool, error) {
		m, err := matchers.get(h)
		if err != nil {
			return false, err
		}
		m.Reset()
		return true, nil
	})
}

// MatcherRollback undoes the last n accepted tokens.
func MatcherRollback(h int64, n int) (bool, error) {
	return safecall.Do("MatcherRollback", func() (bool, error) {
		m, err := matchers.get(h)
		if err != nil {
			return false, err
		}
		return true, m.Rollback(n)
	})
}

// MatcherClose releases a matcher.
func MatcherClose(h int64) (bool, error) {
	return safecall.Do("MatcherClose", func() (bool, error) {
		_, err := matchers.remove(h)
		return err == nil, err
	})
}

func popcount(words []uint32) int {
	n := 0
	for _, w := range words {
		for ; w != 0; w &= w - 1 {
			n++
		}
	}
	return n
}
