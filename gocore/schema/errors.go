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

// Ignored is a keyword that the Lenient option let through unenforced: the
// grammar accepts instances that this keyword would have rejected.
type Ignored struct {
	Keyword string // the JSON Schema keyword
	Pointer string // JSON pointer of the schema holding it
	Reason  string // why it could not be enforced
}

// String says where, what and why.
func (i Ignored) String() string {
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
