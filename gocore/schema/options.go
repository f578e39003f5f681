package schema

// Whitespace says what the grammar allows between the tokens of a JSON text.
type Whitespace uint8

const (
	// Flexible allows JSON's own whitespace, [ \t\n\r]*, between tokens.
	Flexible Whitespace = iota
	// Compact allows no whitespace at all.
	Compact
	// Bounded allows a single space, or one or two newlines followed by at most
	// 20 spaces or tabs (llama.cpp's rule), so that a model cannot loop on
	// whitespace.
	Bounded
)

// String is the name the CLI uses for w.
func (w Whitespace) String() string {
	switch w {
	case Compact:
		return "compact"
	case Bounded:
		return "bounded"
	}
	return "flexible"
}

// ParseWhitespace reads "flexible", "compact" or "bounded".
func ParseWhitespace(s string) (Whitespace, bool) {
	switch s {
	case "flexible", "":
		return Flexible, true
	case "compact":
		return Compact, true
	case "bounded":
		return Bounded, true
	}
	return Flexible, false
}

// An Option configures FromJSONSchema and FromRegex.
type Option func(*config)

type config struct {
	ws            Whitespace
	lenient       bool
	strictObjects bool
	llamaCompat   bool
	maxIntDigits  int // 0: unbounded
	lengthCap     int // 0: none
	draft         Draft
	exactTypes    bool
	resources     map[string][]byte
}

// WithResources gives the documents that the schema's references may name
// besides itself, by URI (a "$ref" to "https://example.com/address.json#/x"
// is resolved in resources["https://example.com/address.json"]). Nothing is
// ever fetched: a reference to any other document is a *SchemaError. Each
// document's own "$id" names it too.
func WithResources(docs map[string][]byte) Option {
	return func(c *config) { c.resources = docs }
}

// ExactTypes reads a schema without "type" as JSON Schema does: an instance of
// any type is accepted where the keywords about other types do not apply
// ({"required": ["a"]} accepts 12). By default such a schema is narrowed to the
// types its keywords are about ({"required": ["a"]} means an object), because a
// schema written for a model's output almost always means that type, and a
// model offered every type may well pick another one. Both are sound: the
// default grammar is a subset of ExactTypes' one.
func ExactTypes() Option { return func(c *config) { c.exactTypes = true } }

// Draft is a JSON Schema dialect. It decides how identifiers and references
// are resolved: in drafts 4 to 7 a "$ref" ignores its sibling keywords,
// including an "$id" beside it ("$ref" prevents a sibling "$id" from changing
// the base URI), and draft 4 spells "$id" as "id". (The converter enforces a
// "$ref"'s siblings in every draft: the grammar is then narrower, never wider.)
type Draft uint8

// The dialects WithDraft takes.
const (
	Draft2020 Draft = iota // 2020-12, the default
	Draft2019              // 2019-09
	Draft7
	Draft6
	Draft4
)

// WithDraft sets the dialect of a schema whose "$schema" names none (default
// Draft2020, as the current specification says). A "$schema" naming a draft
// always wins.
func WithDraft(d Draft) Option { return func(c *config) { c.draft = d } }

// DefaultLengthCap is the largest minLength or maxLength intersected with a
// pattern's automaton (whose size grows with the bound) unless WithLengthCap says
// otherwise. A plain string's bounds are never capped: they are one counted
// repetition, which costs the same for any count (minLength is only bounded by
// gbnf.DefaultMaxRepeat, the largest count a grammar may require).
const DefaultLengthCap = 5000

// WithLengthCap sets the length cap (default DefaultLengthCap; n <= 0: no cap).
// A maxLength above it is lowered to it (the grammar then refuses longer
// strings, and FromJSONSchema lists it in []Ignored with Narrowed set); a
// minLength above it is a *SchemaError.
func WithLengthCap(n int) Option {
	return func(c *config) {
		c.lengthCap = max(n, 0)
	}
}

func newConfig(opts []Option) config {
	c := config{lengthCap: DefaultLengthCap}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// WithWhitespace sets the whitespace mode (default Flexible). FromRegex ignores it.
func WithWhitespace(w Whitespace) Option { return func(c *config) { c.ws = w } }

// Lenient makes keywords that cannot be enforced be ignored (and reported in the
// returned []Ignored) instead of failing the conversion. The grammar may then
// accept instances the schema rejects.
func Lenient() Option { return func(c *config) { c.lenient = true } }

// StrictObjects makes an object schema without "additionalProperties" forbid
// properties it does not list, as llama.cpp's converter does (the JSON Schema
// default allows them). An explicit "additionalProperties" still wins.
func StrictObjects() Option { return func(c *config) { c.strictObjects = true } }

// LlamaCppCompat reads schemas as llama.cpp's json-schema-to-grammar does, for
// its test vectors: StrictObjects, the empty schema {} stands for any JSON
// object, and integers have at most 16 digits. Every choice narrows the
// grammar, so it stays sound.
func LlamaCppCompat() Option {
	return func(c *config) {
		c.strictObjects = true
		c.llamaCompat = true
		c.maxIntDigits = 16
	}
}
