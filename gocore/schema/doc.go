// Package schema turns JSON Schema and regular expressions into GBNF text in
// llama.cpp's dialect, for gbnf.Parse and the engine to run.
//
// It owns two front ends:
//
//   - FromJSONSchema converts a JSON Schema document (draft 4 to 2020-12) into a
//     grammar whose language is a subset of the instances the schema accepts,
//     serialized as JSON. It is sound first: a keyword that constrains instances
//     and that a context-free grammar cannot enforce (uniqueItems, not,
//     if/then/else, ...) is a *SchemaError naming the keyword and its JSON
//     pointer, unless the Lenient option asks to ignore it, in which case it is
//     listed in the returned []Ignored. Annotations (title, description, default,
//     examples, unknown vocabulary, ...) are ignored silently.
//   - FromRegex converts a regular expression (Go's regexp/syntax, Perl flags)
//     into a grammar for the strings it matches in full.
//
// Where the grammar is deliberately narrower than the schema (it never is wider):
// object properties appear in the schema's order, additional properties after the
// named ones; strings are written in canonical JSON form where exactness needs it
// (property names, const and enum strings, pattern and format strings: no \u
// escapes except for control characters, no "\/"); bounded numbers take no
// exponent; the root value has no surrounding whitespace; lone UTF-16 surrogate
// escapes are never produced. See convert.go for the details of each keyword.
//
// It knows nothing of tokenizers, vocabularies, the engine or Python: its output
// is plain GBNF text.
package schema
