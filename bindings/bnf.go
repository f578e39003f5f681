package bindings

import (
	"encoding/json"
	"fmt"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/safecall"
)

// parseDialect parses grammar text in a dialect: "gbnf" (llama.cpp's) or "bnf"
// (bnf_sampler's). An empty root takes the dialect's default.
func parseDialect(src, root, dialect string) (*gbnf.Grammar, error) {
	var opts []gbnf.Option
	if root != "" {
		opts = append(opts, gbnf.WithRoot(root))
	}
	switch dialect {
	case "", "gbnf":
		return gbnf.Parse(src, opts...)
	case "bnf":
		return gbnf.ParseBNF(src, opts...)
	}
	return nil, fmt.Errorf("unknown grammar dialect %q: expected \"gbnf\" or \"bnf\"", dialect)
}

// GrammarCompileDialect is GrammarCompile for a grammar in dialect "gbnf" or "bnf"
// (bnf_sampler's BNF; an empty root then means <start>, else the first rule).
func GrammarCompileDialect(vocabHandle int64, src, root, triggersJSON, dialect string) (int64, error) {
	if dialect == "" || dialect == "gbnf" {
		return GrammarCompile(vocabHandle, src, root, triggersJSON)
	}
	return safecall.Do("GrammarCompileDialect", func() (int64, error) {
		v, err := vocabs.get(vocabHandle)
		if err != nil {
			return 0, err
		}
		g, err := parseDialect(src, root, dialect)
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
				PatternsAtStart: t.PatternsAtStart, After: t.After,
			}))
		}
		// The dialect is part of the key: the same text means other things.
		key := compiledKey{v, dialect + "\x00" + src, root, triggersJSON}
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

// MatcherPossibleTokens returns, as a JSON list, the token ids allowed next; with
// longestOnly, bnf_sampler's listing (engine.Matcher.PossibleTokens).
func MatcherPossibleTokens(h int64, longestOnly bool) (string, error) {
	return safecall.Do("MatcherPossibleTokens", func() (string, error) {
		m, err := matchers.get(h)
		if err != nil {
			return "", err
		}
		ids, err := m.PossibleTokens(longestOnly)
		if err != nil {
			return "", err
		}
		if ids == nil {
			ids = []int{}
		}
		b, err := json.Marshal(ids)
		return string(b), err
	})
}
