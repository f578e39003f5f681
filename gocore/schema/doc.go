// Package schema turns JSON Schema and regular expressions into GBNF text in
// llama.cpp's dialect, for gbnf.Parse and the engine to run.
//
// It owns two front ends:
//
//   - FromJSONSchema converts a JSON Schema document (draft 4 to 2020-12) into a
//     grammar whose language is a subset of the instances the schema accepts,
//     serialized as JSON. It is sound first: a keyword that constrains instances
//     and that a context-free grammar cannot enforce (uniqueItems over an
//     infinite item domain, not without an exact positive form, a $dynamicRef
//     whose target depends on the path to it, ...) is a *SchemaError naming the
//     keyword and its JSON pointer, unless the Lenient option asks to ignore it, in which case it is
//     listed in the returned []Ignored. Annotations (title, description, default,
//     examples, unknown vocabulary, ...) are ignored silently.
//   - FromRegex converts a regular expression (Go's regexp/syntax, Perl flags)
//     into a grammar for the strings it matches in full.
//
// Convert (and Grammar) return a JSON Schema's grammar parsed: the converter
// hands its rules to gbnf.ParseRules, so no GBNF text is written and parsed
// again unless a caller asks for it (Converted.Text, byte for byte
// FromJSONSchema's).
//
// Where the grammar is deliberately narrower than the schema (it never is wider):
// object properties appear in the schema's order, additional properties after the
// named ones; strings are written in canonical JSON form where exactness needs it
// (property names, const and enum strings, pattern and format strings: no \u
// escapes except for control characters, no "\/"); bounded numbers take no
// exponent; the root value has no surrounding whitespace; lone UTF-16 surrogate
// escapes are never produced; a schema without "type" is limited to the types
// its keywords are about ({"properties": ...} means an object) unless
// ExactTypes is given; "format" is an assertion (2020-12 makes it an
// annotation by default): hostnames have no A-labels ("xn--", whose punycode
// validity is no small grammar) and IDN labels are short and from common
// scripts; uniqueItems over more than 10 possible items takes them in the
// schema's order (listed with Narrowed set); a maxLength
// intersected with a pattern above
// the length cap (DefaultLengthCap, WithLengthCap) is lowered to it and listed
// in the returned []Ignored with Narrowed set, and item counts above 2000 are
// capped. "not" is enforced where it has an exact positive form (rewriteNot):
// not {}, not {"type": ...}, not not X, not required, flipped bounds, not
// pattern and not enum of strings (automata), not anyOf/allOf and several
// independent keywords of those; other forms are refused. The same negations
// make overlapping oneOf exact (branch i and not the others) and if/then/else
// ((if and then) or (not if and else)); dependencies become "absent, or
// present with what it needs". contains with minContains/maxContains is a
// counting automaton over the items (contains.go); a schema with enum or const
// is the values that pass every other keyword, checked on each value
// (checkConst), so any keyword is enforced there. A "format" that JSON Schema does not define
// ("semver", "path", ...) is unknown vocabulary, which validators ignore: it
// constrains nothing; a defined format the converter cannot write is refused.
//
// Automata (dfa.go) decide what the syntax tree of a regex cannot: a pattern
// together with minLength/maxLength is the product of the pattern's automaton
// with a counter; patternProperties split property names into regions (the
// patterns a name matches, or none, and not a named property), each with its
// own value schema (the allOf of the patterns it matches, or
// additionalProperties), so differently typed patterns are enforced per key and
// a false pattern forbids its keys. Enum and const sets are written as
// prefix-factored tries, and long runs of optional properties in blocks entered
// through key tries, so that their grammars stay linear and their states hold
// few stacks. A schema that accepts no finite instance (a definition that must
// contain itself), a $ref to one, or a const/enum with a lone surrogate is a
// *SchemaError naming the pointer.
//
// Numbers: integer bounds become exact digit-range grammars (no leading zeros,
// no -0); number bounds that are integers are exact too (the fraction is split
// into all-zero and non-zero cases), and number bounds that are not integers
// too, through the same automaton as multipleOf with divisor 1: digits past the
// bounds' last fraction digit are free, and a non-zero one decides a strict
// comparison. Under ExactTypes integers may be written with a zero fraction
// (4.0). multipleOf is exact: the grammar is a
// minimized automaton following the remainder of x·10^d modulo p (m = p/10^d)
// through the digits, combined with the bounds, which makes every bound exact,
// or a trie of the multiples when the bounds hold few. Such numbers take no
// exponent, no -0, and only zeros past the d-th fraction digit. Automata above
// 1,024 states are refused.
//
// References ($ref) resolve by URI as validators resolve them (refs.go): the
// base URI each "$id" sets, "$anchor", "$dynamicRef" where its target is
// static, and other documents given by WithResources (nothing is fetched);
// WithDraft says which dialect a schema without "$schema" is in.
//
// Regexes (FromRegex, "pattern", patternProperties) go through Go's
// regexp/syntax. JSON Schema patterns are ECMA-262: ecma.go rewrites the few
// constructs whose meaning differs in Go ("." and \s, \uXXXX) before parsing.
// Inside a JSON string the grammar matches the decoded characters: each is
// written in canonical JSON form, control characters in either escaped form.
//
// It knows nothing of tokenizers, vocabularies, the engine or Python: its output
// is plain GBNF text.
package schema
