package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// object is a JSON object that remembers the order of its keys: property order
// matters to the grammar. vals[i] is the value of keys[i]. Most schema objects hold a
// few keys, found by a scan; past smallObject keys, idx maps each key to its index.
type object struct {
	keys []string
	vals []any
	idx  map[string]int
}

// smallObject is the most keys an object looks up by scanning.
const smallObject = 8

func newObject() *object { return &object{} }

// find returns the index of key k, or -1.
func (o *object) find(k string) int {
	if o.idx != nil {
		if i, ok := o.idx[k]; ok {
			return i
		}
		return -1
	}
	for i, x := range o.keys {
		if x == k {
			return i
		}
	}
	return -1
}

func (o *object) get(k string) (any, bool) {
	if o == nil {
		return nil, false
	}
	if i := o.find(k); i >= 0 {
		return o.vals[i], true
	}
	return nil, false
}

// val is the value of key k, nil when o has no such key (or o is nil).
func (o *object) val(k string) any {
	v, _ := o.get(k)
	return v
}

// names are the keys of o (nil for a nil object).
func (o *object) names() []string {
	if o == nil {
		return nil
	}
	return o.keys
}

func (o *object) has(k string) bool { _, ok := o.get(k); return ok }

// set gives key k the value v: in place when k is there, else appended.
func (o *object) set(k string, v any) {
	if i := o.find(k); i >= 0 {
		o.vals[i] = v
		return
	}
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
	if o.idx != nil {
		o.idx[k] = len(o.keys) - 1
	} else if len(o.keys) > smallObject {
		o.index()
	}
}

// index builds idx from keys.
func (o *object) index() {
	o.idx = make(map[string]int, len(o.keys))
	for i, k := range o.keys {
		o.idx[k] = i
	}
}

func (o *object) del(k string) {
	i := o.find(k)
	if i < 0 {
		return
	}
	o.keys = append(o.keys[:i:i], o.keys[i+1:]...)
	o.vals = append(o.vals[:i:i], o.vals[i+1:]...)
	if o.idx != nil {
		o.index()
	}
}

func (o *object) clone() *object {
	c := &object{keys: append([]string(nil), o.keys...), vals: append([]any(nil), o.vals...)}
	if o.idx != nil {
		c.index()
	}
	return c
}

// decodeJSON parses one JSON value: objects become *object, numbers json.Number,
// arrays []any, and strings, booleans and null as encoding/json makes them.
//
// A string holding a lone UTF-16 surrogate escape (\ud800 without its pair) is
// kept in WTF-8 (the surrogate's three-byte encoding), not replaced by U+FFFD as
// encoding/json does: such a string is invalid UTF-8, which lets the converter
// refuse it where it would have to be generated (see loneSurrogate).
func decodeJSON(data []byte) (any, error) {
	v, _, err := decodeJSONKeys(data)
	return v, err
}

// identifierKeys is what decodeJSONKeys saw of the keys that make identifiers
// worth resolving (see needsIdentifiers).
type identifierKeys struct {
	// known is set when the direct scanner read the whole text: only then are
	// the other fields complete (see needsIdentifiers).
	known bool
	// anchors: a key "$id", "$anchor", "$dynamicAnchor" or "$dynamicRef", or
	// a key "$ref" whose value is a string that does not start with '#'
	anchors bool
	id      bool // a key "id"
}

// decodeJSONKeys is decodeJSON, also noting the keys needsIdentifiers looks
// for (in the same pass over the text, where a separate scan of a large
// schema for each of them cost as much as decoding it).
func decodeJSONKeys(data []byte) (any, identifierKeys, error) {
	// A direct scanner reads valid JSON (nearly every schema) in one pass,
	// checking as it goes; anything it does not take (invalid JSON, or nested
	// deeper than maxJSONDepth) goes through encoding/json's tokens, for their
	// error messages.
	r := validJSON{data: data}
	if v, ok := r.value(0); ok {
		if r.ws(); r.i == len(data) {
			r.keys.known = true
			return v, r.keys, nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(&jsonReader{dec: dec, data: data}, 0)
	if err != nil {
		return nil, identifierKeys{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, identifierKeys{}, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, identifierKeys{}, nil
}

const maxJSONDepth = 512

// validJSON reads a JSON text that json.Valid accepted, into the values
// decodeJSON returns (the same values decodeValue builds from encoding/json's
// tokens, strings decoded as decodeWTF8 does), without the token stream's
// per-token allocations. ok is false only past maxJSONDepth.
type validJSON struct {
	data []byte
	i    int
	keys identifierKeys
}

// The scanner's value and str return false for any text that is not JSON (RFC
// 8259, as json.Valid reads it): what they return true for is valid. They may
// refuse valid text too (too deep), which decodeJSON then reads slowly.

func (r *validJSON) ws() {
	for r.i < len(r.data) {
		switch r.data[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// next skips whitespace and returns the byte there (0 at the end).
func (r *validJSON) next() byte {
	r.ws()
	if r.i < len(r.data) {
		return r.data[r.i]
	}
	return 0
}

func (r *validJSON) value(depth int) (any, bool) {
	if depth > maxJSONDepth {
		return nil, false
	}
	switch c := r.next(); c {
	case '{':
		r.i++
		o := newObject()
		if r.next() == '}' {
			r.i++
			return o, true
		}
		for {
			if r.next() != '"' {
				return nil, false
			}
			k, ok := r.str()
			if !ok || r.next() != ':' {
				return nil, false
			}
			r.i++
			at := r.next() // where the value starts: '"' for a string
			vi := r.i
			v, ok := r.value(depth + 1)
			if !ok {
				return nil, false
			}
			if len(k) >= 2 && (k[0] == '$' || k == "id") {
				switch k {
				case "$id", "$anchor", "$dynamicAnchor", "$dynamicRef":
					r.keys.anchors = true
				case "$ref":
					// as written: an escaped '#' counts as not a fragment
					r.keys.anchors = r.keys.anchors || at == '"' && vi+1 < len(r.data) && r.data[vi+1] != '#'
				case "id":
					r.keys.id = true
				}
			}
			o.set(k, v)
			switch r.next() {
			case ',':
				r.i++
			case '}':
				r.i++
				return o, true
			default:
				return nil, false
			}
		}
	case '[':
		r.i++
		a := []any{}
		if r.next() == ']' {
			r.i++
			return a, true
		}
		for {
			v, ok := r.value(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			switch r.next() {
			case ',':
				r.i++
			case ']':
				r.i++
				return a, true
			default:
				return nil, false
			}
		}
	case '"':
		return r.str()
	case 't':
		return true, r.literal("true")
	case 'f':
		return false, r.literal("false")
	case 'n':
		return nil, r.literal("null")
	default:
		return r.number()
	}
}

func (r *validJSON) literal(s string) bool {
	if len(r.data)-r.i < len(s) || string(r.data[r.i:r.i+len(s)]) != s {
		return false
	}
	r.i += len(s)
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number reads -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *validJSON) number() (any, bool) {
	d, j := r.data, r.i
	digits := func() bool {
		if r.i >= len(d) || !isDigit(d[r.i]) {
			return false
		}
		for r.i < len(d) && isDigit(d[r.i]) {
			r.i++
		}
		return true
	}
	if r.i < len(d) && d[r.i] == '-' {
		r.i++
	}
	switch {
	case r.i < len(d) && d[r.i] == '0':
		r.i++
	case !digits():
		return nil, false
	}
	if r.i < len(d) && d[r.i] == '.' {
		r.i++
		if !digits() {
			return nil, false
		}
	}
	if r.i < len(d) && (d[r.i] == 'e' || d[r.i] == 'E') {
		r.i++
		if r.i < len(d) && (d[r.i] == '+' || d[r.i] == '-') {
			r.i++
		}
		if !digits() {
			return nil, false
		}
	}
	return json.Number(d[j:r.i]), true
}

// str reads a string at r.i (its opening quote).
func (r *validJSON) str() (string, bool) {
	r.i++
	j := r.i
	plain := true
	for {
		if r.i >= len(r.data) {
			return "", false
		}
		c := r.data[r.i]
		if c == '"' {
			break
		}
		switch {
		case c == '\\':
			plain = false
			if r.i+1 >= len(r.data) {
				return "", false
			}
			switch r.data[r.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				r.i += 2
			case 'u':
				if r.i+6 > len(r.data) {
					return "", false
				}
				for _, h := range r.data[r.i+2 : r.i+6] {
					if !isDigit(h) && (h|0x20 < 'a' || h|0x20 > 'f') {
						return "", false
					}
				}
				r.i += 6
			default:
				return "", false
			}
		case c < 0x20:
			return "", false
		default:
			if c >= 0x80 {
				plain = false
			}
			r.i++
		}
	}
	raw := r.data[j:r.i]
	r.i++
	if plain || utf8.Valid(raw) && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw), true
	}
	return decodeWTF8(raw), true
}

// jsonReader reads tokens and, for strings that encoding/json decoded with a
// replacement character, re-decodes their raw text (see decodeJSON).
type jsonReader struct {
	dec  *json.Decoder
	data []byte
}

func (r *jsonReader) token() (json.Token, error) {
	start := r.dec.InputOffset()
	tok, err := r.dec.Token()
	if err != nil {
		return nil, err
	}
	if s, ok := tok.(string); ok && strings.ContainsRune(s, utf8.RuneError) {
		end := r.dec.InputOffset()
		if start >= 0 && end <= int64(len(r.data)) && start < end {
			raw := r.data[start:end]
			if q := bytes.IndexByte(raw, '"'); q >= 0 && len(raw)-q >= 2 {
				return decodeWTF8(raw[q+1 : len(raw)-1]), nil
			}
		}
	}
	return tok, nil
}

// decodeWTF8 decodes the text between the quotes of a valid JSON string, as
// encoding/json does except that a lone surrogate escape becomes its WTF-8
// bytes (ED A0 80 for \ud800) instead of U+FFFD.
func decodeWTF8(raw []byte) string {
	var b []byte
	hex4 := func(i int) (rune, bool) {
		if i+4 > len(raw) {
			return 0, false
		}
		v, err := strconv.ParseUint(string(raw[i:i+4]), 16, 32)
		return rune(v), err == nil
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			r, n := utf8.DecodeRune(raw[i:])
			b = utf8.AppendRune(b, r) // invalid UTF-8 becomes U+FFFD, as in encoding/json
			i += n
			continue
		}
		if i+1 >= len(raw) {
			break
		}
		e := raw[i+1]
		i += 2
		switch e {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := hex4(i)
			if !ok {
				b = utf8.AppendRune(b, utf8.RuneError)
				continue
			}
			i += 4
			if r >= 0xD800 && r < 0xDC00 && i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
				if lo, ok := hex4(i + 2); ok && lo >= 0xDC00 && lo < 0xE000 {
					b = utf8.AppendRune(b, 0x10000+(r-0xD800)<<10+(lo-0xDC00))
					i += 6
					continue
				}
			}
			if r >= 0xD800 && r < 0xE000 {
				b = append(b, byte(0xE0|r>>12), byte(0x80|(r>>6)&0x3F), byte(0x80|r&0x3F))
				continue
			}
			b = utf8.AppendRune(b, r)
		default:
			b = append(b, e)
		}
	}
	return string(b)
}

// loneSurrogate reports whether a decoded value holds a string (or an object
// key) with a lone surrogate, which no valid JSON text can contain.
func loneSurrogate(v any) bool {
	switch v := v.(type) {
	case string:
		return !utf8.ValidString(v)
	case []any:
		for _, x := range v {
			if loneSurrogate(x) {
				return true
			}
		}
	case *object:
		for _, k := range v.keys {
			if !utf8.ValidString(k) || loneSurrogate(v.val(k)) {
				return true
			}
		}
	}
	return false
}

func decodeValue(dec *jsonReader, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("JSON nested deeper than %d", maxJSONDepth)
	}
	tok, err := dec.token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := newObject()
			for dec.dec.More() {
				kt, err := dec.token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				o.set(k, v)
			}
			if _, err := dec.dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			a := []any{}
			for dec.dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.dec.Token(); err != nil {
				return nil, err
			}
			return a, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}

// jsonKind names the JSON type of a decoded value, with "integer" for numbers
// whose value is whole.
func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if r, ok := ratOf(v); ok && r.IsInt() {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case *object:
		return "object"
	}
	return "?"
}

// ratOf reads a JSON number exactly.
func ratOf(n json.Number) (*big.Rat, bool) {
	r, ok := new(big.Rat).SetString(string(n))
	return r, ok
}

// canonical writes v as compact JSON in the one spelling the grammar uses for
// literals: keys in their order, strings with the fewest escapes, numbers as
// written. Two values are equal (for enum and const) when their canonical forms
// are, except that numbers compare by value (see valueKey).
func canonical(v any) string {
	var b strings.Builder
	writeCanonical(&b, v, false)
	return b.String()
}

// valueKey is canonical with numbers normalized to their exact value, so that
// 1, 1.0 and 1e0 compare equal as JSON Schema requires.
func valueKey(v any) string {
	var b strings.Builder
	writeCanonical(&b, v, true)
	return b.String()
}

// sameValue reports whether valueKey(a) == valueKey(b), without writing either
// out: shared subtrees (the same *object, as $ref resolution and merging make
// them) compare in O(1), and a difference stops the walk. Merging schemas asks
// this at every level, so serializing both sides each time was quadratic in the
// schema's depth.
func sameValue(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		if a == bn {
			return true
		}
		return valueKey(a) == valueKey(bn)
	case string:
		bs, ok := b.(string)
		if !ok {
			return false
		}
		return a == bs || jsonQuote(a) == jsonQuote(bs)
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], bl[i]) {
				return false
			}
		}
		return true
	case *object:
		bo, ok := b.(*object)
		if !ok {
			return false
		}
		if a == bo {
			return true
		}
		if len(a.keys) != len(bo.keys) {
			return false
		}
		for i, k := range a.keys {
			if bo.keys[i] != k && jsonQuote(bo.keys[i]) != jsonQuote(k) {
				return false
			}
			if !sameValue(a.val(k), bo.val(bo.keys[i])) {
				return false
			}
		}
		return true
	}
	return valueKey(a) == valueKey(b)
}

func writeCanonical(b *strings.Builder, v any, normNum bool) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.Number:
		if normNum {
			if r, ok := ratOf(v); ok {
				b.WriteString(r.RatString())
				return
			}
		}
		b.WriteString(string(v))
	case string:
		b.WriteString(jsonQuote(v))
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, x, normNum)
		}
		b.WriteByte(']')
	case *object:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsonQuote(k))
			b.WriteByte(':')
			writeCanonical(b, v.val(k), normNum)
		}
		b.WriteByte('}')
	}
}

// jsonQuote writes s as a JSON string with the fewest escapes: \" \\ and the
// control characters (short forms where JSON has them, else \u00xx). A lone
// surrogate kept by decodeJSON is written as its \uXXXX escape (for messages:
// grammars never contain one); other invalid UTF-8 becomes U+FFFD.
func jsonQuote(s string) string {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return `"` + s + `"`
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 && i+3 <= len(s) && s[i] == 0xED && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2]&0xC0 == 0x80 {
			fmt.Fprintf(&b, `\u%04x`, rune(s[i]&0x0F)<<12|rune(s[i+1]&0x3F)<<6|rune(s[i+2]&0x3F))
			i += 3
			continue
		}
		if r >= 0x20 && r != '"' && r != '\\' && r != utf8.RuneError {
			b.WriteString(s[i : i+n])
		} else {
			b.WriteString(jsonEscapeRune(r))
		}
		i += n
	}
	b.WriteByte('"')
	return b.String()
}

// jsonEscapeRune is r as it appears inside a canonical JSON string.
func jsonEscapeRune(r rune) string {
	switch r {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if r < 0x20 {
		return fmt.Sprintf(`\u%04x`, r)
	}
	if r == utf8.RuneError {
		return "\uFFFD"
	}
	return string(r)
}
