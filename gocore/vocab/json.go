package vocab

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a small, strict JSON reader for the parts of tokenizer.json that are too
// large for encoding/json to be quick: it skips values without building them (the
// merges list is most of a BPE file) and unescapes vocabulary keys straight into a
// caller's buffer. Every method reports errors with a byte offset, line and column.
// It never panics on malformed input: every index is checked against len(data).
type scanner struct {
	data []byte
	pos  int
	src  string // file name for error messages, e.g. "tokenizer.json"
}

// syntaxError describes malformed JSON at byte offset off.
func (s *scanner) syntaxError(off int, format string, args ...any) error {
	if off > len(s.data) {
		off = len(s.data)
	}
	line, col := 1, 1
	for _, c := range s.data[:off] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return fmt.Errorf("%s: invalid JSON at byte offset %d (line %d, column %d): %s",
		s.src, off, line, col, fmt.Sprintf(format, args...))
}

// unexpected reports the byte at the current position (or the end of input).
func (s *scanner) unexpected(context string) error {
	if s.pos >= len(s.data) {
		return s.syntaxError(s.pos, "unexpected end of input %s", context)
	}
	return s.syntaxError(s.pos, "unexpected %q %s", s.data[s.pos], context)
}

func (s *scanner) skipWS() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte without consuming it (0 at the end).
func (s *scanner) peek() byte {
	s.skipWS()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// expect consumes byte c after optional white space.
func (s *scanner) expect(c byte, context string) error {
	if s.peek() != c {
		return s.unexpected(fmt.Sprintf("(want %q) %s", c, context))
	}
	s.pos++
	return nil
}

// objectNext advances inside an object: first is true before the first member. It
// returns false at the closing brace; otherwise it has consumed the separator and the
// member's key (unescaped into key) and colon, and the value comes next.
func (s *scanner) objectNext(first bool, key []byte, context string) (bool, []byte, error) {
	c := s.peek()
	if c == '}' {
		s.pos++
		return false, key, nil
	}
	if !first {
		if c != ',' {
			return false, key, s.unexpected("after an object member " + context)
		}
		s.pos++
		c = s.peek()
	}
	if c != '"' {
		return false, key, s.unexpected("where an object key belongs " + context)
	}
	key, err := s.appendString(key[:0])
	if err != nil {
		return false, key, err
	}
	if err := s.expect(':', "after an object key "+context); err != nil {
		return false, key, err
	}
	return true, key, nil
}

// arrayNext advances inside an array like objectNext: it returns false at the
// closing bracket, otherwise the next element comes next.
func (s *scanner) arrayNext(first bool, context string) (bool, error) {
	c := s.peek()
	if c == ']' {
		s.pos++
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, s.unexpected("after an array element " + context)
		}
		s.pos++
		s.skipWS()
	}
	return true, nil
}

// appendString reads a JSON string at the current position and appends its
// unescaped bytes to dst. Invalid escapes and raw control characters are errors; a
// lone UTF-16 surrogate becomes U+FFFD, as in encoding/json.
func (s *scanner) appendString(dst []byte) ([]byte, error) {
	if s.peek() != '"' {
		return dst, s.unexpected("where a string belongs")
	}
	start := s.pos
	s.pos++
	for {
		// Fast path: copy the run up to the next quote, backslash or control byte.
		i := s.pos
		for i < len(s.data) {
			c := s.data[i]
			if c == '"' || c == '\\' || c < 0x20 {
				break
			}
			i++
		}
		dst = append(dst, s.data[s.pos:i]...)
		s.pos = i
		if i >= len(s.data) {
			return dst, s.syntaxError(start, "unterminated string")
		}
		switch c := s.data[i]; {
		case c == '"':
			s.pos++
			return dst, nil
		case c < 0x20:
			return dst, s.syntaxError(i, "control character 0x%02x inside a string", c)
		}
		// A backslash escape.
		if i+1 >= len(s.data) {
			return dst, s.syntaxError(start, "unterminated string")
		}
		e := s.data[i+1]
		if c := jsonEscapes[e]; c != 0 {
			dst = append(dst, c)
			s.pos = i + 2
			continue
		}
		switch e {
		case 'u':
			r, ok := s.hex4(i + 2)
			if !ok {
				return dst, s.syntaxError(i, "invalid \\u escape")
			}
			s.pos = i + 6
			if utf16.IsSurrogate(r) {
				if r2, ok := s.hex4(s.pos + 2); ok && s.pos+1 < len(s.data) &&
					s.data[s.pos] == '\\' && s.data[s.pos+1] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
						s.pos += 6
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, s.syntaxError(i, "invalid escape \\%c", e)
		}
	}
}

// jsonEscapes maps the byte after a backslash to the byte it stands for (0: not a
// one-byte escape).
var jsonEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hex4 parses four hex digits at data[at:at+4].
func (s *scanner) hex4(at int) (rune, bool) {
	if at < 0 || at+4 > len(s.data) {
		return 0, false
	}
	var r rune
	for _, c := range s.data[at : at+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// skipString skips a JSON string, checking its escapes.
func (s *scanner) skipString() error {
	start := s.pos
	s.pos++ // opening quote
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return nil
		case c == '\\':
			if s.pos+1 >= len(s.data) {
				return s.syntaxError(start, "unterminated string")
			}
			switch s.data[s.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos += 2
			case 'u':
				if _, ok := s.hex4(s.pos + 2); !ok {
					return s.syntaxError(s.pos, "invalid \\u escape")
				}
				s.pos += 6
			default:
				return s.syntaxError(s.pos, "invalid escape \\%c", s.data[s.pos+1])
			}
		case c < 0x20:
			return s.syntaxError(s.pos, "control character 0x%02x inside a string", c)
		default:
			s.pos++
		}
	}
	return s.syntaxError(start, "unterminated string")
}

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 256

// skipValue skips one JSON value of any kind, checking its syntax.
func (s *scanner) skipValue() error { return s.skipValueDepth(0) }

func (s *scanner) skipValueDepth(depth int) error {
	if depth > maxDepth {
		return s.syntaxError(s.pos, "nesting deeper than %d", maxDepth)
	}
	switch c := s.peek(); {
	case c == '"':
		return s.skipString()
	case c == '{':
		s.pos++
		for first := true; ; first = false {
			c := s.peek()
			if c == '}' {
				s.pos++
				return nil
			}
			if !first {
				if c != ',' {
					return s.unexpected("after an object member")
				}
				s.pos++
			}
			if s.peek() != '"' {
				return s.unexpected("where an object key belongs")
			}
			if err := s.skipString(); err != nil {
				return err
			}
			if err := s.expect(':', "after an object key"); err != nil {
				return err
			}
			if err := s.skipValueDepth(depth + 1); err != nil {
				return err
			}
		}
	case c == '[':
		s.pos++
		for first := true; ; first = false {
			more, err := s.arrayNext(first, "")
			if err != nil || !more {
				return err
			}
			if err := s.skipValueDepth(depth + 1); err != nil {
				return err
			}
		}
	case c == '-' || ('0' <= c && c <= '9'):
		_, err := s.number()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return s.unexpected("where a value belongs")
	}
}

func (s *scanner) literal(word string) error {
	if !bytes.HasPrefix(s.data[s.pos:], []byte(word)) {
		return s.unexpected("in a literal (want " + word + ")")
	}
	s.pos += len(word)
	return nil
}

// number consumes a JSON number and returns its text.
func (s *scanner) number() ([]byte, error) {
	s.skipWS()
	start := s.pos
	d := s.data
	i := s.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(d) && d[i] == '0' {
		i++
	} else if digits() == 0 {
		s.pos = i
		return nil, s.unexpected("in a number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			s.pos = i
			return nil, s.unexpected("after a decimal point")
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			s.pos = i
			return nil, s.unexpected("in an exponent")
		}
	}
	s.pos = i
	return d[start:i], nil
}

// integer reads a JSON number that must be an integer in [0, limit].
// context names the value for the error message; it is called only on error.
func (s *scanner) integer(limit int64, context func() string) (int64, error) {
	s.skipWS()
	start := s.pos
	if c := s.peek(); c != '-' && (c < '0' || c > '9') {
		what := "the end of input"
		if s.pos < len(s.data) {
			what = fmt.Sprintf("%q", c)
		}
		return 0, fmt.Errorf("%s: %s: want an integer id, found %s (at byte offset %d)", s.src, context(), what, start)
	}
	text, err := s.number()
	if err != nil {
		return 0, err
	}
	n, perr := strconv.ParseInt(string(text), 10, 64)
	if perr != nil || n < 0 || n > limit {
		return 0, fmt.Errorf("%s: %s: %s is not an integer id in 0..%d (at byte offset %d)",
			s.src, context(), text, limit, start)
	}
	return n, nil
}

// raw skips one value and returns its bytes and starting offset.
func (s *scanner) raw() ([]byte, int, error) {
	s.skipWS()
	start := s.pos
	if err := s.skipValue(); err != nil {
		return nil, start, err
	}
	return s.data[start:s.pos], start, nil
}
