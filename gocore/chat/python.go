package chat

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// pyStr is str(v) in Python, which Jinja2 prints for {{ v }}: None is "None", floats
// keep their ".0", lists and dicts are their repr, Undefined is "".
func pyStr(v jinja.Value) string {
	switch {
	case v.IsUndefined() || v.IsCallable():
		return ""
	case v.IsString():
		return v.AsString()
	}
	var b strings.Builder
	pyRepr(&b, v)
	return b.String()
}

// pyRepr writes repr(v).
func pyRepr(b *strings.Builder, v jinja.Value) {
	switch {
	case v.IsUndefined():
		b.WriteString("Undefined")
	case v.IsNone():
		b.WriteString("None")
	case v.IsBool():
		if v.AsBool() {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pyFloat(v.AsFloat(), "inf", "nan"))
	case v.IsString():
		pyReprString(b, v.AsString())
	case v.IsList():
		b.WriteByte('[')
		for i, item := range v.AsList().Items {
			if i > 0 {
				b.WriteString(", ")
			}
			pyRepr(b, item)
		}
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		b.WriteByte('{')
		for i, k := range d.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			pyReprString(b, k)
			b.WriteString(": ")
			pyRepr(b, d.Data[k])
		}
		b.WriteByte('}')
	default:
		b.WriteString(v.String())
	}
}

// pyFloat is repr(f): the shortest digits that read back as f, in fixed notation for
// exponents -4..15 (with ".0" when integral) and scientific notation otherwise.
func pyFloat(f float64, inf, nan string) string {
	switch {
	case math.IsNaN(f):
		return nan
	case math.IsInf(f, 1):
		return inf
	case math.IsInf(f, -1):
		return "-" + inf
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return e // Go writes "1e+20", "1.5e-07" as Python does
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// pyReprString writes repr(s): single quotes unless s has a single quote and no double
// quote, backslash escapes for the quote, backslash, \n, \r, \t, and \x, \u or \U
// escapes for characters that are not printable.
func pyReprString(b *strings.Builder, s string) {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == ' ' || r > 0x7e && unicode.IsPrint(r) || r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			fmt.Fprintf(b, `\U%08x`, r)
		}
	}
	b.WriteByte(q)
}

// jsonOptions are the arguments of transformers' tojson filter, which calls
// json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
type jsonOptions struct {
	ensureASCII bool
	indent      *string // nil: one line
	itemSep     string
	keySep      string
	sortKeys    bool
}

// tojson is transformers' tojson filter: tojson(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False), the options also taken by position.
func tojson(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), errors.New("tojson: nothing to encode")
	}
	names := []string{"ensure_ascii", "indent", "separators", "sort_keys"}
	opt := map[string]jinja.Value{}
	for i, a := range args[1:] {
		if i >= len(names) {
			return jinja.Undefined(), errors.New("tojson: too many arguments")
		}
		opt[names[i]] = a
	}
	for k, v := range kwargs {
		if !contains(names, k) {
			return jinja.Undefined(), fmt.Errorf("tojson: unexpected argument %s", k)
		}
		opt[k] = v
	}
	o := jsonOptions{itemSep: ", ", keySep: ": "}
	if v, ok := opt["ensure_ascii"]; ok {
		o.ensureASCII = v.IsTruthy()
	}
	if v, ok := opt["sort_keys"]; ok {
		o.sortKeys = v.IsTruthy()
	}
	if v, ok := opt["indent"]; ok && !v.IsNone() && !v.IsUndefined() {
		var ind string
		switch {
		case v.IsInt():
			ind = strings.Repeat(" ", int(max(0, min(v.AsInt(), 1<<10))))
		case v.IsString():
			ind = v.AsString()
		default:
			return jinja.Undefined(), fmt.Errorf("tojson: indent must be an integer or a string, not %s", kindName(v))
		}
		o.indent, o.itemSep = &ind, ","
	}
	if v, ok := opt["separators"]; ok && !v.IsNone() && !v.IsUndefined() {
		if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Items[0].IsString() || !v.AsList().Items[1].IsString() {
			return jinja.Undefined(), errors.New("tojson: separators must be a pair of strings")
		}
		o.itemSep, o.keySep = v.AsList().Items[0].AsString(), v.AsList().Items[1].AsString()
	}
	var b strings.Builder
	if err := pyJSON(&b, args[0], &o, 0); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(b.String()), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// pyJSON writes v as Python's json.dumps does with the options o.
func pyJSON(b *strings.Builder, v jinja.Value, o *jsonOptions, depth int) error {
	if depth > 1000 {
		return errors.New("tojson: nesting too deep")
	}
	newline := func(d int) {
		if o.indent != nil {
			b.WriteByte('\n')
			for range d {
				b.WriteString(*o.indent)
			}
		}
	}
	switch {
	case v.IsNone():
		b.WriteString("null")
	case v.IsBool():
		if v.AsBool() {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pyFloat(v.AsFloat(), "Infinity", "NaN"))
	case v.IsString():
		jsonString(b, v.AsString(), o.ensureASCII)
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, item := range items {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			newline(depth + 1)
			if err := pyJSON(b, item, o, depth+1); err != nil {
				return err
			}
		}
		newline(depth)
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		if d.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		keys := d.Keys
		if o.sortKeys {
			keys = append([]string(nil), keys...)
			sort.Strings(keys)
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			newline(depth + 1)
			jsonString(b, k, o.ensureASCII)
			b.WriteString(o.keySep)
			if err := pyJSON(b, d.Data[k], o, depth+1); err != nil {
				return err
			}
		}
		newline(depth)
		b.WriteByte('}')
	case v.IsUndefined():
		return errors.New("tojson: Object of type Undefined is not JSON serializable")
	default:
		return fmt.Errorf("tojson: %s is not JSON serializable", v.String())
	}
	return nil
}

// jsonString writes s as json.dumps does: with ensure_ascii=False only the quote, the
// backslash and control characters are escaped; with ensure_ascii=True everything
// outside printable ASCII is, as \uXXXX (surrogate pairs above U+FFFF).
func jsonString(b *strings.Builder, s string, ensureASCII bool) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteByte(s[i]) // not UTF-8: written as it is
			i++
			continue
		}
		i += size
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || ensureASCII && r == 0x7f:
				fmt.Fprintf(b, `\u%04x`, r)
			case ensureASCII && r > 0x7f:
				if r >= 0x10000 {
					r -= 0x10000
					fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
				} else {
					fmt.Fprintf(b, `\u%04x`, r)
				}
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
