package schema

import (
	"fmt"
	"regexp"
	"strings"
)

// JSON Schema patterns are ECMA-262 regular expressions. ecmaToGo rewrites the
// constructs whose meaning differs in Go's syntax, so that the Go pattern matches
// exactly the strings the ECMA one does:
//   - "." excludes all ECMA line terminators (\n \r U+2028 U+2029), not only \n;
//   - \s and \S use ECMA's (Unicode) white space set, not Go's ASCII one;
//   - \uXXXX and \u{X...} become \x{...}; \cX becomes the control character;
//   - [\b] is backspace; [] matches nothing and [^] anything;
//   - an escaped non-punctuation character (ECMA identity escape) is literal.
//
// Backreferences and lookarounds stay, for parseRegex to reject with a clear message.
func ecmaToGo(p string) (string, error) {
	var sb strings.Builder
	inClass := false
	classStart := -1
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\':
			if i+1 >= len(p) {
				return "", fmt.Errorf("pattern ends with a lone backslash")
			}
			i++
			e := p[i]
			switch e {
			case 'u':
				hex := ""
				if i+1 < len(p) && p[i+1] == '{' {
					j := strings.IndexByte(p[i:], '}')
					if j < 0 {
						return "", fmt.Errorf(`unterminated \u{...} escape`)
					}
					hex = p[i+2 : i+j]
					i += j
				} else if i+4 < len(p)+0 && isHex4(p[i+1:min(i+5, len(p))]) {
					hex = p[i+1 : i+5]
					i += 4
				} else {
					return "", fmt.Errorf(`\u must be followed by 4 hex digits`)
				}
				sb.WriteString(`\x{` + hex + `}`)
			case 's', 'S':
				set := ecmaSpaceClass
				if e == 'S' {
					set = ecmaNonSpaceClass
				}
				if inClass {
					sb.WriteString(set)
				} else {
					sb.WriteString("[" + set + "]")
				}
			case 'c':
				if i+1 < len(p) && (p[i+1]|0x20) >= 'a' && (p[i+1]|0x20) <= 'z' {
					fmt.Fprintf(&sb, `\x{%x}`, p[i+1]%32)
					i++
				} else {
					sb.WriteString(`\\c`)
				}
			case 'b':
				if inClass {
					sb.WriteString(`\x08`)
				} else {
					sb.WriteString(`\b`)
				}
			case '0':
				sb.WriteString(`\x00`)
			case 'd', 'D', 'w', 'W', 'B', 't', 'n', 'r', 'f', 'v', 'x', 'k', 'p', 'P',
				'1', '2', '3', '4', '5', '6', '7', '8', '9':
				sb.WriteByte('\\')
				sb.WriteByte(e)
			default:
				if e < 0x80 && isPunct(e) {
					sb.WriteByte('\\')
					sb.WriteByte(e)
				} else if e < 0x80 {
					sb.WriteString(regexp.QuoteMeta(string(e)))
				} else {
					sb.WriteByte(e) // first byte of a UTF-8 sequence: literal character
				}
			}
		case inClass:
			if c == ']' {
				if i == classStart {
					// ECMA: [] matches nothing, [^] anything.
					s := sb.String()
					if strings.HasSuffix(s, "[^") {
						sb.Reset()
						sb.WriteString(s[:len(s)-2] + `[\x00-\x{10FFFF}]`)
					} else {
						sb.Reset()
						sb.WriteString(s[:len(s)-1] + `[^\x00-\x{10FFFF}]`)
					}
					inClass = false
					continue
				}
				inClass = false
			} else if c == '[' {
				sb.WriteString(`\[`)
				continue
			}
			sb.WriteByte(c)
		case c == '[':
			inClass = true
			sb.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '^' {
				sb.WriteByte('^')
				i++
			}
			classStart = i + 1
		case c == '.':
			sb.WriteString(`[^\n\r\x{2028}\x{2029}]`)
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String(), nil
}

const (
	ecmaSpaceClass    = `\t\n\x0B\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`
	ecmaNonSpaceClass = `\x00-\x08\x0E-\x1F\x21-\x{9f}\x{a1}-\x{167f}\x{1681}-\x{1fff}\x{200b}-\x{2027}\x{202a}-\x{202e}\x{2030}-\x{205e}\x{2060}-\x{2fff}\x{3001}-\x{fefe}\x{ff00}-\x{10ffff}`
)

func isHex4(s string) bool {
	if len(s) != 4 {
		return false
	}
	for i := 0; i < 4; i++ {
		c := s[i] | 0x20
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func isPunct(c byte) bool {
	return strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0
}

// ecmaRegexp compiles an ECMA pattern into a Go regexp with the same meaning,
// once per conversion (c.regexps): a schema checks the same patternProperties
// against every property name. The memo lives as long as the conversion; a
// process-wide one would keep every pattern any schema ever used.
func (c *conv) ecmaRegexp(p string) (*regexp.Regexp, error) {
	if r, ok := c.regexps[p]; ok {
		return r.re, r.err
	}
	gp, err := ecmaToGo(p)
	var re *regexp.Regexp
	if err == nil {
		re, err = regexp.Compile(gp)
	}
	if c.regexps == nil {
		c.regexps = map[string]compiledRegexp{}
	}
	c.regexps[p] = compiledRegexp{re, err}
	return re, err
}

// compiledRegexp is a memoized ecmaRegexp result.
type compiledRegexp struct {
	re  *regexp.Regexp
	err error
}
