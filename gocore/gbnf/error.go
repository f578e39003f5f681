package gbnf

import "fmt"

// ErrorCode says what kind of problem an Error reports.
type ErrorCode uint8

const (
	// ErrSyntax: the text is not GBNF (a missing "::=", an unclosed "(", a stray character).
	ErrSyntax ErrorCode = iota + 1
	// ErrEscape: a bad escape sequence in a literal or character class.
	ErrEscape
	// ErrUTF8: the grammar text is not valid UTF-8.
	ErrUTF8
	// ErrEmpty: the grammar defines no rules.
	ErrEmpty
	// ErrDuplicateRule: a rule is defined twice.
	ErrDuplicateRule
	// ErrUndefinedRule: a rule is referenced but never defined.
	ErrUndefinedRule
	// ErrMissingRoot: the root rule (default "root") is not defined.
	ErrMissingRoot
	// ErrLeftRecursion: a rule can reach itself without consuming input, with
	// something left to match afterwards, so its expansion would never end.
	ErrLeftRecursion
	// ErrTooLarge: a repetition count or the expanded grammar exceeds a limit
	// (WithMaxRepeat, WithMaxElements).
	ErrTooLarge
	// ErrDeadEnd: an element the root can reach can never match (a character class
	// that matches nothing, such as surrogates or [^\x00-\U0010FFFF], or a rule that
	// can match nothing, such as a ::= b, b ::= a).
	ErrDeadEnd
)

var codeNames = [...]string{
	ErrSyntax:        "syntax error",
	ErrEscape:        "bad escape",
	ErrUTF8:          "invalid UTF-8",
	ErrEmpty:         "empty grammar",
	ErrDuplicateRule: "duplicate rule",
	ErrUndefinedRule: "undefined rule",
	ErrMissingRoot:   "missing root rule",
	ErrLeftRecursion: "left recursion",
	ErrTooLarge:      "grammar too large",
	ErrDeadEnd:       "dead end",
}

// String names the code, e.g. "undefined rule".
func (c ErrorCode) String() string {
	if int(c) < len(codeNames) && codeNames[c] != "" {
		return codeNames[c]
	}
	return fmt.Sprintf("ErrorCode(%d)", uint8(c))
}

// Error is a problem with a grammar: where it is, what kind it is and what was
// expected. Parse returns every failure as an *Error.
type Error struct {
	Pos  Pos       // 1-based line and byte column of the problem
	Code ErrorCode // the kind of problem
	Msg  string    // what is wrong and what was expected, e.g. `expected "::=" after rule name "value"`
}

// Error formats the error as "line:col: message".
func (e *Error) Error() string {
	return fmt.Sprintf("%d:%d: %s", e.Pos.Line, e.Pos.Col, e.Msg)
}

// String formats a position as "line:col".
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }
