package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ardanlabs/jinja"
)

// decodeJSON reads one JSON value into a template value as Python's json.load would:
// objects keep their key order (tojson and dict iteration show it), integers stay
// integers and numbers with a fraction or exponent become floats. Trailing data after
// the value is an error.
func decodeJSON(data []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return jinja.Value{}, jsonError(data, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Value{}, fmt.Errorf("invalid JSON: unexpected data after the value at byte offset %d", dec.InputOffset())
	}
	return v, nil
}

// jsonError says where in data the decoder stopped.
func jsonError(data []byte, dec *json.Decoder, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("invalid JSON: unexpected end of input")
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte offset %d: %v", se.Offset, err)
	}
	return fmt.Errorf("invalid JSON near byte offset %d: %v", dec.InputOffset(), err)
}

func decodeValue(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Value{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			items := []jinja.Value{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Value{}, err
				}
				items = append(items, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return jinja.Value{}, err
			}
			return jinja.NewList(items), nil
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return jinja.Value{}, err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Value{}, err
				}
				d.AsDict().Set(kt.(string), v) // a repeated key keeps its first place, as in Python
			}
			if _, err := dec.Token(); err != nil { // '}'
				return jinja.Value{}, err
			}
			return d, nil
		}
		return jinja.Value{}, fmt.Errorf("unexpected %q", t)
	case json.Number:
		return jinja.FromGoValue(t), nil
	case string:
		return jinja.NewString(t), nil
	case bool:
		return jinja.NewBool(t), nil
	case nil:
		return jinja.None(), nil
	}
	return jinja.Value{}, fmt.Errorf("unexpected token %v", tok)
}

// goValue turns a Go value given in Options.Vars into a template value. JSON-shaped
// values are taken as they are; json.RawMessage is decoded keeping its key order; a
// map[string]any becomes a dict with sorted keys (Go maps have no order).
func goValue(v any) (jinja.Value, error) {
	switch x := v.(type) {
	case nil:
		return jinja.None(), nil
	case jinja.Value:
		return x, nil
	case json.RawMessage:
		return decodeJSON(x)
	case bool:
		return jinja.NewBool(x), nil
	case string:
		return jinja.NewString(x), nil
	case int:
		return jinja.NewInt(int64(x)), nil
	case int64:
		return jinja.NewInt(x), nil
	case float64:
		return jinja.NewFloat(x), nil
	case json.Number:
		return jinja.FromGoValue(x), nil
	case []string:
		items := make([]jinja.Value, len(x))
		for i, s := range x {
			items[i] = jinja.NewString(s)
		}
		return jinja.NewList(items), nil
	case []any:
		items := make([]jinja.Value, len(x))
		for i, e := range x {
			item, err := goValue(e)
			if err != nil {
				return jinja.Value{}, err
			}
			items[i] = item
		}
		return jinja.NewList(items), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := jinja.NewDict()
		for _, k := range keys {
			item, err := goValue(x[k])
			if err != nil {
				return jinja.Value{}, err
			}
			d.AsDict().Set(k, item)
		}
		return d, nil
	}
	return jinja.Value{}, fmt.Errorf("a %T cannot be a template variable (use JSON-shaped values)", v)
}

// kindName names a template value's JSON type for error messages.
func kindName(v jinja.Value) string {
	switch {
	case v.IsNone():
		return "null"
	case v.IsBool():
		return "a boolean"
	case v.IsNumber():
		return "a number"
	case v.IsString():
		return "a string"
	case v.IsList():
		return "a list"
	case v.IsDict():
		return "an object"
	}
	return strings.ToLower(v.String())
}
