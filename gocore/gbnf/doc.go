// Package gbnf parses GBNF, llama.cpp's grammar notation, into a small flat IR
// that the engine compiles into a matcher.
//
// It owns the text-to-grammar step: the syntax of llama.cpp's dialect (rules
// over several lines, alternatives, literals and character classes with
// escapes, ".", groups, the repetitions * + ? {n} {n,} {n,m} {,m}, comments,
// token references <[N]> and !<[N]>, named special tokens such as <|eot_id|>),
// the expansion of literals into one Char element per code point and of groups
// and repetitions into generated helper rules (counts above 64 stay counters:
// one Repeat element, whatever the count), and the checks that make a grammar
// safe to run: every referenced rule is defined, the root rule exists, left
// recursion is rewritten away (leftrec_rewrite.go), no dead end is reachable (an element that can never match:
// see analysis.go), and the expansion stays within limits (WithMaxRepeat,
// WithMaxElements). Every failure is an *Error with a 1-based
// line:col and a message that says what was expected.
//
// It knows nothing of tokenizers, vocabularies or the engine: a named token
// such as <|eot_id|> stays a name (Element.Token is -1) for the engine to
// resolve against a vocabulary, and a token id <[N]> is not checked against any
// vocabulary size.
//
// The IR (ir.go) is read-only once Parse returns it: elements repeated by the
// expansion of x{n} share their Ranges slices.
//
// Where tether differs from llama.cpp's parser, it is stricter or more explicit:
// a rule defined twice is an error (llama.cpp keeps the last definition), an
// empty character class [] is an error (llama.cpp matches the empty string),
// escapes beyond U+10FFFF and invalid UTF-8 are errors, {,m} is accepted as
// {0,m}, and \- and \^ are accepted as escapes. Left recursion is detected
// through rules that can match the empty string by any route, not only through
// rules with an empty alternative; a cycle that leaves nothing behind, such as
// the one in ( [x]* )*, is harmless and accepted (see leftrec.go).
//
// ParseBNF (bnf.go) reads bnf_sampler's BNF dialect into the same IR, with its
// token-level elements <any!> (a Token element with id AnyToken) and <except!(...)>
// (an Except element); the engine gives them meaning against a vocabulary.
//
// Left recursion (expr ::= expr "+" term | term, directly or through other rules)
// is not refused but rewritten into an equivalent right-recursive grammar
// (leftrec_rewrite.go); only a cycle with no way out is still an error.
//
// Format writes a Grammar back as GBNF text, one line per rule, generated
// helper rules included; parsing that text gives the same Grammar.
//
// ParseRules takes a grammar that a program builds rule by rule (the JSON
// Schema converter) as names and bodies, and returns what Parse of their text
// (Text) would, without that text being written and scanned again.
package gbnf
