package bindings

import (
	"encoding/json"
	"fmt"

	"github.com/tetherlm/tether/gocore/tokenmask"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/safecall"
	"github.com/tetherlm/tether/gocore/session"
	"github.com/tetherlm/tether/gocore/vocab"
)

var (
	vocabs   = newRegistry[*vocab.Vocab]("vocabulary")
	grammars = newRegistry[*session.Grammar]("grammar")
	matchers = newRegistry[session.EngineMatcher]("matcher")
)

// VocabFromJSON loads a vocabulary from the text of a tokenizer.json. configJSON is a
// tokenizer_config.json (or "" / "{}"). eogJSON is "" for the default end-of-generation
// set (the tokenizer's EOS and the end-of-turn tokens tether knows), or a JSON list of
// token ids that is exactly the set. Loading the same inputs again while the first
// vocabulary is in use gives that vocabulary (its token trie and the token sets it
// caches across grammars are shared).
func VocabFromJSON(tokenizerJSON, configJSON, eogJSON string) (int64, error) {
	return vocabFromJSON("VocabFromJSON", tokenizerJSON, configJSON, eogJSON)
}

// VocabFromJSONUnshared is VocabFromJSON with a vocabulary of its own, never shared
// with another load of the same inputs: its caches start cold and stay its own (for
// isolation, and for benchmarks that compare engines on cold first visits).
func VocabFromJSONUnshared(tokenizerJSON, configJSON, eogJSON string) (int64, error) {
	return vocabFromJSON("VocabFromJSONUnshared", tokenizerJSON, configJSON, eogJSON, vocab.WithoutCache())
}

func vocabFromJSON(name, tokenizerJSON, configJSON, eogJSON string, extra ...vocab.Option) (int64, error) {
	return safecall.Do(name, func() (int64, error) {
		opts := extra
		if configJSON != "" && configJSON != "{}" {
			opts = append(opts, vocab.WithTokenizerConfig([]byte(configJSON)))
		}
		if eogJSON != "" {
			var ids []int
			if err := json.Unmarshal([]byte(eogJSON), &ids); err != nil {
				return 0, fmt.Errorf("end-of-generation ids: want a JSON list of ints: %v", err)
			}
			opts = append(opts, vocab.WithoutDefaultEOG(), vocab.WithEOGIDs(ids...))
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
// start rule; triggersJSON ("" for none) makes the grammar lazy; maxStacks caps the
// stacks one state may hold (0: the default). The same inputs reuse a recently
// compiled grammar.
func GrammarCompile(vocabHandle int64, src, root, triggersJSON string, maxStacks int) (int64, error) {
	return safecall.Do("GrammarCompile", func() (int64, error) {
		return compileGrammar(vocabHandle, src, root, triggersJSON, "gbnf", maxStacks)
	})
}

// GrammarCompileDialect is GrammarCompile for a grammar in dialect "gbnf" or "bnf"
// (bnf_sampler's BNF; an empty root then means <start>, else the first rule).
func GrammarCompileDialect(vocabHandle int64, src, root, triggersJSON, dialect string, maxStacks int) (int64, error) {
	return safecall.Do("GrammarCompileDialect", func() (int64, error) {
		return compileGrammar(vocabHandle, src, root, triggersJSON, dialect, maxStacks)
	})
}

func compileGrammar(vocabHandle int64, src, root, triggersJSON, dialect string, maxStacks int) (int64, error) {
	v, err := vocabForCompile(vocabHandle, maxStacks)
	if err != nil {
		return 0, err
	}
	spec := session.Spec{Src: src, Root: root, Dialect: dialect, MaxStacks: maxStacks}
	if triggersJSON != "" {
		var t triggerSpec
		if err := json.Unmarshal([]byte(triggersJSON), &t); err != nil {
			return 0, fmt.Errorf("triggers: %v", err)
		}
		spec.Triggers = &engine.Triggers{
			Tokens: t.Tokens, Words: t.Words, Patterns: t.Patterns,
			PatternsAtStart: t.PatternsAtStart, PatternsFull: t.PatternsFull, After: t.After,
			PreservedTokens: t.PreservedTokens,
		}
	}
	return addCompiled(v, spec, nil)
}

// vocabForCompile returns the vocabulary of handle h after checking a compile's
// maxStacks (0: the default).
func vocabForCompile(h int64, maxStacks int) (*vocab.Vocab, error) {
	v, err := vocabs.get(h)
	if err != nil {
		return nil, err
	}
	if maxStacks < 0 {
		return nil, fmt.Errorf("max_stacks: %d is negative", maxStacks)
	}
	return v, nil
}

// addCompiled compiles spec (parsed: its source already parsed, or nil) for v and
// registers the grammar.
func addCompiled(v *vocab.Vocab, spec session.Spec, parsed *gbnf.Grammar) (int64, error) {
	g, err := session.Compile(v, spec, parsed)
	if err != nil {
		return 0, grammarError(err)
	}
	return grammars.add(g), nil
}

// GrammarSource returns the grammar text a compiled grammar was made from (for a
// grammar from GrammarFromSchema, the GBNF its schema converted to).
func GrammarSource(h int64) (string, error) {
	return safecall.Do("GrammarSource", func() (string, error) {
		g, err := grammars.get(h)
		if err != nil {
			return "", err
		}
		return g.Spec.Src, nil
	})
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
		return true, coreError(m.AcceptToken(id))
	})
}

// MatcherAcceptText advances the matcher by the UTF-8 bytes of text.
func MatcherAcceptText(h int64, text string) (bool, error) {
	return safecall.Do("MatcherAcceptText", func() (bool, error) {
		m, err := matchers.get(h)
		if err != nil {
			return false, err
		}
		return true, coreError(m.AcceptBytes([]byte(text)))
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
		v, err := view[uint32](mask, words, "mask")
		if err != nil {
			return 0, err
		}
		dst := tokenmask.Mask(v)
		if err := m.FillMask(dst); err != nil {
			return 0, coreError(err)
		}
		return dst.Count(), nil
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
