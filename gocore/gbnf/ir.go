package gbnf

// The grammar IR: what Parse produces and the engine compiles. It is deliberately
// small and flat, like llama.cpp's: every rule is a list of alternatives, every
// alternative a sequence of elements, and the parser has already expanded literals
// into one Char element per code point and repetitions (* + ? {n,m}) and groups into
// generated helper rules. The engine never sees GBNF syntax.

// Kind says what an Element matches.
type Kind uint8

const (
	// Char matches one code point in Ranges (or, if Negated, one code point not in them).
	// "." is a Char with Negated set and no Ranges.
	Char Kind = iota
	// RuleRef matches the rule Grammar.Rules[Rule].
	RuleRef
	// Token matches the single token with id Token (GBNF `<[N]>`), or, when Name is set,
	// the special token with that text (GBNF `<|eot_id|>`), resolved by the engine
	// against the vocabulary. If Negated (GBNF `!<[N]>`), it matches any single token
	// except that one.
	Token
	// Repeat matches the rule Grammar.Rules[Rule] at least Min and at most Max
	// times (a counted repetition kept as a counter instead of unrolled: see
	// Parse). The rule never matches the empty string.
	Repeat
	// Except is bnf_sampler's <except!(...)> (ParseBNF only; see bnf.go).
	Except
	// Byte matches one raw byte whose value is in Ranges (values 0..255), taken only
	// between characters: it never decodes UTF-8 (ParseBNF's \xHH bytes that are
	// not part of a UTF-8 character; see bnf.go for the language such a grammar
	// describes).
	Byte
)

// Range is an inclusive range of code points.
type Range struct{ Lo, Hi rune }

// Element is one step of a sequence. A large grammar has one per character of
// its literals (a 1 MB schema grammar: ~140k), so it is kept narrow: 64 bytes.
type Element struct {
	Kind    Kind
	Negated bool    // Char: match outside Ranges; Token: match any token but this one
	Rule    int32   // RuleRef, Repeat: index into Grammar.Rules; Except: the excepted rule, or -1
	Min     int32   // Repeat: the fewest times
	Max     int32   // Repeat: the most times (>= Min, >= 1)
	Token   int32   // Token: the id, or -1 when Name is set
	Ranges  []Range // Char: sorted, non-overlapping; Byte: byte values 0..255
	// Name is, for Token, a named special token, e.g. "<|eot_id|>"; for Except
	// with Rule -1 (bnf dialect), the excepted literal's bytes.
	Name string
}

// Sequence is one alternative: elements matched one after another. An empty
// sequence matches the empty string.
type Sequence []Element

// Rule is a named rule with its alternatives.
type Rule struct {
	Name string // as written in the grammar; generated rules get names like "item-3"
	Alts []Sequence
	Pos  Pos // where the rule is defined (generated rules: where their syntax is)
}

// Pos is a 1-based line and column (in bytes) in the grammar text.
type Pos struct{ Line, Col int }

// Grammar is a parsed GBNF grammar.
type Grammar struct {
	Rules []Rule
	Root  int            // index of the root rule
	Index map[string]int // rule name -> index
}
