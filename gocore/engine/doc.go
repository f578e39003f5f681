// Package engine runs grammars: it compiles a parsed GBNF grammar (gocore/gbnf's IR)
// against a tokenizer's Vocabulary into an immutable Grammar, and steps per-sequence
// Matchers through generated tokens, filling token masks (uint32 bitsets, bit i of
// word i/32 for token i) that say which tokens keep the text inside the grammar.
//
// The engine is a nondeterministic pushdown automaton over code points, driven one
// byte at a time: a state is a set of stacks of grammar positions (persistent,
// interned linked lists that share their tails) plus, per stack, the UTF-8 character
// it is in the middle of, so a token may end inside a character. Sets of stacks are
// interned as configurations and their byte transitions memoized, which makes a walk
// of the token trie cost a table lookup per trie node. For each terminal position the
// tokens decided by that position alone (accepted inside its rule, or rejected there)
// are computed once, lazily, per Grammar; at run time only the remaining "uncertain"
// tokens are walked against the full stacks.
//
// That first analysis of a position is kept cheap: a trie subtree whose bytes all
// take the configuration along one run (a loop like [^"]*, or a counted repetition
// unrolled into nested rules) is settled from per-node byte-kind summaries and
// token character counts instead of walked; keys deepen through trampolines ("call
// rule R") so that the many call sites of a rule share one analysis; and analyses
// are shared across the grammars of a vocabulary by a fingerprint of the structure
// the longest token can reach. Positions that differ only in a few ASCII characters
// of a negated class (the states of a key-exclusion automaton) take their caches
// from one shared "widened twin" (twins.go), and the positions along a counter
// (a string's maxLength) from the previous count's, walking again only the tokens
// long enough to tell the counts apart (counts.go); the same holds along a
// repetition gbnf unrolled into a chain of rules (counts up to 64), whose rules
// Compile recognizes (findChains). Runs also cross multi-byte
// characters: a lead byte whose every completion leads to one configuration starts
// a run there, and the lead byte E2 has a byte kind of its own, so a regular
// expression's "." (which refuses U+2028 and U+2029) still runs over the others.
//
// Token elements match whole tokens: <[N]> and !<[N]> of GBNF, and bnf_sampler's
// <any!> and <except!(...)> (tokenelems.go), whose per-token verdicts are decided once
// at Compile. Matcher.PossibleTokens lists the allowed tokens, all or by bnf_sampler's
// longest-only rule.
//
// The package owns: the compiled program, the token trie (cached per Vocabulary),
// stacks, masks, rollback, and lazy activation (trigger tokens, words, patterns, and
// activation after a marker).
//
// Answers are exact or errors: where a limit (WithMaxStacks) prevents an exact
// answer, FillMask, IsAllowed, AcceptToken and AcceptBytes return a *LimitError
// (errors.go), and a mask is never partial. Counted repetitions (gbnf.Repeat) are
// counters on the stack (arena.expandRep), so their counts cost nothing to compile.
// Stacks form a graph-structured stack (arena.go): the stacks of a state that share
// their top are one over the union of their tails, so an ambiguous grammar (however
// many parses it keeps alive) costs at most one stack per grammar position, and the
// stack limit is met only by a grammar with that many positions live at once.
//
// It must not know about: GBNF syntax (gocore/gbnf parses it), tokenizer file
// formats (gocore/vocab reads them and implements Vocabulary), sampling, models, or
// Python. Failures are error values that say what failed and where; the package
// does not recover panics (a panic is a bug: the bindings and the CLI recover at
// their boundary).
package engine
