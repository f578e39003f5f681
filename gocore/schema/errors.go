package schema

import "fmt"

// SchemaError says which keyword of a schema cannot be converted, and where.
type SchemaError struct {
	Keyword string // the JSON Schema keyword, e.g. "uniqueItems"; "" for the schema as a whole
	Pointer string // JSON pointer (RFC 6901) of the schema holding the keyword, "" for the root
	Msg     string // what is wrong and, where it helps, what to do

	unsat bool // the schema (part) accepts nothing; anyOf drops such branches
}

// Error says "schema: at #POINTER: "KEYWORD": MSG".
func (e *SchemaError) Error() string {
	ptr := e.Pointer
	if ptr == "" {
		ptr = "#"
	} else {
		ptr = "#" + ptr
	}
	if e.Keyword == "" {
		return fmt.Sprintf("schema: at %s: %s", ptr, e.Msg)
	}
	return fmt.Sprintf("schema: at %s: %q: %s", ptr, e.Keyword, e.Msg)
}

// Ignored is a keyword that the grammar does not enforce as written. Usually
// the Lenient option let it through unenforced: the grammar accepts instances
// that this keyword would have rejected. With Narrowed set it is the other
// way round, in every mode: a cap (WithLengthCap) made the grammar refuse
// instances the keyword allows; the grammar stays sound.
type Ignored struct {
	Keyword  string // the JSON Schema keyword
	Pointer  string // JSON pointer of the schema holding it
	Reason   string // why it could not be enforced
	Narrowed bool   // the grammar is narrower than the keyword, not wider
}

// String says where, what and why.
func (i Ignored) String() string {
	if i.Narrowed {
		return fmt.Sprintf("#%s: %s narrowed (%s)", i.Pointer, i.Keyword, i.Reason)
	}
	return fmt.Sprintf("#%s: %s (%s)", i.Pointer, i.Keyword, i.Reason)
}

// RegexError says why a regular expression cannot be converted.
type RegexError struct {
	Pattern string // the pattern as given
	Msg     string
}

// Error names the pattern and the problem.
func (e *RegexError) Error() string {
	return fmt.Sprintf("schema: regex %q: %s", e.Pattern, e.Msg)
}
