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
// matters to the grammar.
type object struct {
	keys []string
	vals map[string]any
}

func newObject() *object { return &object{vals: map[string]any{}} }

func (o *object) get(k string) (any, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.vals[k]
	return v, ok
}

func (o *object) has(k string) bool { _, ok := o.get(k); return ok }

func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, x := range o.keys {
		if x == k {
			o.keys = append(o.keys[:i:i], o.keys[i+1:]...)
			break
		}
	}
}

func (o *object) clone() *object {
	c := &object{keys: append([]string(nil), o.keys...), vals: make(map[string]any, len(o.vals))}
	for k, v := range o.vals {
		c.vals[k] = v
	}
	return c
}

// decodeJSON parses one JSON value: objects become *object, numbers json.Number,
// arrays []any, and strings, booleans and null as encoding/json makes them.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}

const maxJSONDepth = 512

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("JSON nested deeper than %d", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := newObject()
			for dec.More() {
				kt, err := dec.Token()
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
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil {
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
			writeCanonical(b, v.vals[k], normNum)
		}
		b.WriteByte('}')
	}
}

// jsonQuote writes s as a JSON string with the fewest escapes: \" \\ and the
// control characters (short forms where JSON has them, else \u00xx). Invalid
// UTF-8 becomes U+FFFD.
func jsonQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		b.WriteString(jsonEscapeRune(r))
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
