package chat

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// The template library (github.com/ardanlabs/jinja v1.8.0) differs from Jinja2 as
// transformers runs it (trim_blocks and lstrip_blocks on, keep_trailing_newline off) in
// ways that change what a template renders:
//
//   - whitespace control: a "-" or a block tag trims the nearest text even when an
//     output tag lies between ("A: {{ x }}{%- endif %}" loses the space after "A:"),
//     and the template's final newline is kept;
//   - its tojson filter writes 1.0 as 1, escapes U+2028/U+2029, ignores sort_keys, and
//     with indent= sorts the keys and escapes <, > and & (transformers' tojson is
//     json.dumps(x, ensure_ascii=False, ...), which keeps the key order);
//   - it prints None as "" (Jinja2: "None"), floats with %g (1.0 as "1"), and strings
//     inside printed lists and dicts without Python's quoting;
//   - string literals know only the escapes \n, \t, \\, \' and \".
//
// Its filters and lexer cannot be changed from outside, so Compile rewrites the
// template first, doing Jinja2's lexing of text and whitespace itself:
//
//   - the source's line breaks become "\n" and one final newline is dropped; "-" and
//     "+" marks, trim_blocks and lstrip_blocks are applied as Jinja2's lexer applies
//     them; comments are dropped; every piece of text left (raw blocks included) becomes
//     an output tag with a string literal, so that the library has no text to trim;
//   - every "EXPR | tojson(ARGS)" becomes "__tether_tojson(EXPR, ARGS)", and every
//     "EXPR | string" and output tag "{{ EXPR }}" prints with "__tether_print(EXPR)";
//     Render supplies both functions, which follow Python;
//   - string literals are decoded with Python's escapes and written again with the
//     library's.
//
// Newlines that the whitespace control removes are put back as spaces inside the next
// tag's code, so the library's line numbers are the template's.

const (
	tojsonFunc = "__tether_tojson"
	printFunc  = "__tether_print"
)

var (
	newlineRE   = regexp.MustCompile(`\r\n|\r|\n`)
	rawBeginRE  = regexp.MustCompile(`^\{%[-+]?\s*raw\s*(?:-%\}|%\})`)
	rawEndRE    = regexp.MustCompile(`\{%([-+]?)\s*endraw\s*(\+%\}|-%\}|%\})`)
	tagOpenerRE = regexp.MustCompile(`\{[{%#]`)
)

// rewriteState carries what the lexer needs across pieces.
type rewriteState struct {
	src          string
	out          strings.Builder
	pendingLines int   // newlines removed since the last tag written
	lineStarting bool  // the last piece consumed ended with a newline
	open         []int // lines of the blocks open
}

// rewritten is a template as given to the library.
type rewritten struct {
	text         string
	percentLine  int // line of the first string literal followed by % (Python string formatting), 0 if none
	unclosedLine int // line of the innermost block left open, 0 if none
}

// rewrite turns a template into the text given to the library (see above). It fails on
// a tag, comment or raw block that is not closed.
func rewrite(source string) (rewritten, error) {
	lines := newlineRE.Split(source, -1)
	if len(lines) > 1 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // keep_trailing_newline=False
	}
	st := &rewriteState{src: strings.Join(lines, "\n"), lineStarting: true}
	src := st.src
	percentLine := 0
	pos := 0
	for {
		loc := tagOpenerRE.FindStringIndex(src[pos:])
		if loc == nil {
			st.text(src[pos:])
			r := rewritten{text: st.out.String(), percentLine: percentLine}
			if n := len(st.open); n > 0 {
				r.unclosedLine = st.open[n-1]
			}
			return r, nil
		}
		open := pos + loc[0]
		kind := src[open+1]
		sign := byte(0)
		if open+2 < len(src) && (src[open+2] == '-' || src[open+2] == '+') {
			sign = src[open+2]
		}
		isRaw := kind == '%' && rawBeginRE.MatchString(src[open:])
		st.text(st.stripBefore(src[pos:open], sign, kind != '{'))
		line := 1 + strings.Count(src[:open], "\n")
		switch {
		case kind == '#':
			q := strings.Index(src[open+2:], "#}")
			if q < 0 {
				return rewritten{}, fmt.Errorf("line %d: comment not closed", line)
			}
			endMark := open + 2 + q
			st.pendingLines += strings.Count(src[open:endMark], "\n")
			pos = st.afterEnd(endMark, 2, src[endMark-1], true)
		case isRaw:
			m := rawBeginRE.FindStringIndex(src[open:])
			begin := open + m[1]
			st.pendingLines += strings.Count(src[open:begin], "\n")
			st.lineStarting = false
			if src[begin-3] == '-' { // no trim_blocks after the raw tag, but "-" strips
				begin = st.skipSpace(begin)
			}
			e := rawEndRE.FindStringSubmatchIndex(src[begin:])
			if e == nil {
				return rewritten{}, fmt.Errorf("line %d: raw block not closed", line)
			}
			var endSign byte
			if e[3] > e[2] {
				endSign = src[begin+e[2]]
			}
			st.text(st.stripBefore(src[begin:begin+e[0]], endSign, true))
			st.pendingLines += strings.Count(src[begin+e[0]:begin+e[4]], "\n")
			closer := src[begin+e[4] : begin+e[5]]
			pos = st.afterEnd(begin+e[5]-2, 2, closer[0], true)
		default:
			codeStart := open + 2
			if sign != 0 {
				codeStart++
			}
			closer := "}}"
			if kind == '%' {
				closer = "%}"
			}
			endMark, ok := tagEnd(src, codeStart, closer)
			if !ok {
				return rewritten{}, fmt.Errorf("line %d: tag not closed", line)
			}
			codeEnd := endMark
			endSign := byte(0)
			if codeEnd > codeStart && (src[codeEnd-1] == '-' || kind == '%' && src[codeEnd-1] == '+') {
				endSign = src[codeEnd-1]
				codeEnd--
			}
			code := src[codeStart:codeEnd]
			if percentLine == 0 && formatsString(code) {
				percentLine = line
			}
			if kind == '%' {
				st.track(code, line)
			}
			code = pyStrings(rewriteFilters(code))
			if kind == '{' && strings.TrimSpace(code) != "" {
				lead := len(code) - len(strings.TrimLeft(code, " \t\n"))
				trail := len(strings.TrimRight(code, " \t\n"))
				code = code[:lead] + printFunc + "((" + code[lead:trail] + "))" + code[trail:]
			}
			st.flushLines()
			st.out.WriteString(src[open : open+2])
			st.out.WriteString(" " + splitBraces(code) + " ")
			st.out.WriteString(closer)
			pos = st.afterEnd(endMark, 2, endSign, kind == '%')
		}
	}
}

// stripBefore applies the whitespace control of the tag that follows text: "-" strips
// all trailing whitespace; otherwise, before a block or comment tag not marked "+",
// lstrip_blocks strips the spaces and tabs that start its line.
func (st *rewriteState) stripBefore(text string, sign byte, block bool) string {
	switch {
	case sign == '-':
		t := strings.TrimRightFunc(text, isPySpace)
		st.pendingLines += strings.Count(text[len(t):], "\n")
		return t
	case sign != '+' && block:
		l := strings.LastIndexByte(text, '\n') + 1
		if (l > 0 || st.lineStarting) && l < len(text) && strings.TrimLeftFunc(text[l:], isPySpace) == "" {
			return text[:l]
		}
	}
	return text
}

// afterEnd consumes a tag's closing delimiter (size bytes at endMark, preceded by sign)
// and the whitespace it trims: all of it after "-", one newline after a plain block
// or comment end (trim_blocks). It returns the position after them.
func (st *rewriteState) afterEnd(endMark, size int, sign byte, block bool) int {
	pos := endMark + size
	st.lineStarting = false
	switch {
	case sign == '-':
		pos = st.skipSpace(pos)
	case sign != '+' && block && pos < len(st.src) && st.src[pos] == '\n':
		pos++
		st.pendingLines++
		st.lineStarting = true
	}
	return pos
}

// skipSpace skips whitespace from pos, counting the newlines it removes.
func (st *rewriteState) skipSpace(pos int) int {
	rest := strings.TrimLeftFunc(st.src[pos:], isPySpace)
	skipped := st.src[pos : len(st.src)-len(rest)]
	st.pendingLines += strings.Count(skipped, "\n")
	if skipped != "" {
		st.lineStarting = skipped[len(skipped)-1] == '\n'
	}
	return len(st.src) - len(rest)
}

// flushLines writes the newlines whitespace control removed as a comment, so that the
// next tag starts on its line in the library's count.
func (st *rewriteState) flushLines() {
	if st.pendingLines > 0 {
		st.out.WriteString("{#" + strings.Repeat("\n", st.pendingLines) + "#}")
		st.pendingLines = 0
	}
}

// blockTags are the statements that open a block closed by "end" + the name.
var blockTags = map[string]bool{"if": true, "for": true, "macro": true, "call": true, "filter": true,
	"block": true, "generation": true, "set": true}

// track follows which blocks are open, to give the line of one left unclosed.
func (st *rewriteState) track(code string, line int) {
	fields := strings.Fields(code)
	if len(fields) == 0 {
		return
	}
	word := fields[0]
	switch {
	case word == "set" && strings.Contains(code, "="):
		// {% set x = ... %} opens no block
	case blockTags[word]:
		st.open = append(st.open, line)
	case strings.HasPrefix(word, "end") && blockTags[word[3:]] && len(st.open) > 0:
		st.open = st.open[:len(st.open)-1]
	}
}

// splitBraces puts a space between two closing braces outside string literals: the
// library ends an output tag at the first "}}", even inside a dict literal.
func splitBraces(code string) string {
	if !strings.Contains(code, "}}") {
		return code
	}
	var b strings.Builder
	for _, t := range lex(code) {
		if t.kind == '}' && strings.HasSuffix(b.String(), "}") {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return b.String()
}

// text writes literal template text as an output tag with a string literal.
func (st *rewriteState) text(s string) {
	if s == "" {
		return
	}
	st.flushLines()
	st.out.WriteString("{{ ")
	st.out.WriteString(libString(s, true))
	st.out.WriteString(" }}")
}

// isPySpace is Python's str.isspace for one character.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}

// libString writes s as a string literal the library reads back as s. Newlines are
// kept as they are when keepNewlines (so line numbers do not move), else escaped.
func libString(s string, keepNewlines bool) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '\n':
			if keepNewlines {
				b.WriteByte(c)
			} else {
				b.WriteString(`\n`)
			}
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// pyStrings rewrites the string literals of tag code: each is decoded as Jinja2 decodes
// it (Python's escapes) and written again for the library, keeping its newlines.
func pyStrings(code string) string {
	toks := lex(code)
	var b strings.Builder
	for _, t := range toks {
		if t.kind != 's' || len(t.text) < 2 || t.text[len(t.text)-1] != t.text[0] {
			b.WriteString(t.text)
			continue
		}
		b.WriteString(libString(pyUnescape(t.text[1:len(t.text)-1]), true))
	}
	return b.String()
}

// pyUnescape decodes Python's string escapes (Jinja2 decodes literals with
// "unicode-escape"); an unknown escape is kept as written.
func pyUnescape(s string) string {
	if !strings.ContainsRune(s, '\\') {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case '\n':
			// a backslash-newline continues the line
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n < len(s) {
				if v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32); err == nil {
					b.WriteRune(rune(v))
					i += n
					continue
				}
			}
			b.WriteByte('\\')
			b.WriteByte(e)
		default:
			if e >= '0' && e <= '7' {
				j := i
				for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
					j++
				}
				v, _ := strconv.ParseUint(s[i:j], 8, 32)
				b.WriteRune(rune(v))
				i = j - 1
				continue
			}
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String()
}

// formatsString reports whether tag code has a string literal followed by %.
func formatsString(code string) bool {
	toks := lex(code)
	for i, t := range toks {
		if t.kind == 's' {
			if j := next(toks, i+1); j < len(toks) && toks[j].kind == '%' {
				return true
			}
		}
	}
	return false
}

// tagEnd finds the closing delimiter of the tag whose code starts at i: the first one
// outside string literals and brackets, as Jinja2's lexer balances them.
func tagEnd(src string, i int, closer string) (int, bool) {
	depth := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\'' || c == '"':
			i = skipString(src, i)
			continue
		case depth == 0 && (c == '-' || c == '+') && strings.HasPrefix(src[i+1:], closer):
			return i + 1, true
		case depth == 0 && strings.HasPrefix(src[i:], closer):
			return i, true
		case c == '(' || c == '[' || c == '{':
			depth++
		case (c == ')' || c == ']' || c == '}') && depth > 0:
			depth--
		}
		i++
	}
	return 0, false
}

// skipString returns the index after the string literal that starts at i.
func skipString(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			return i + 1
		}
	}
	return len(s)
}

// token is a lexical token of tag code.
type token struct {
	kind  byte // 'i' identifier, 'n' number, 's' string, ' ' space, else the character
	start int
	end   int
	text  string
}

func lex(code string) []token {
	var toks []token
	for i := 0; i < len(code); {
		c := code[i]
		start := i
		var kind byte
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			for i < len(code) && strings.IndexByte(" \t\n\r", code[i]) >= 0 {
				i++
			}
			kind = ' '
		case c == '\'' || c == '"':
			i = skipString(code, i)
			kind = 's'
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			for i < len(code) && isIdentByte(code[i]) {
				i++
			}
			kind = 'i'
		case c >= '0' && c <= '9':
			for i < len(code) && (isIdentByte(code[i]) || code[i] == '.') {
				i++
			}
			kind = 'n'
		default:
			i++
			kind = c
		}
		toks = append(toks, token{kind, start, i, code[start:i]})
	}
	return toks
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// matchBrackets pairs each bracket token with its partner (-1 when unpaired).
func matchBrackets(toks []token) []int {
	match := make([]int, len(toks))
	var stack []int
	for i, t := range toks {
		match[i] = -1
		switch t.kind {
		case '(', '[', '{':
			stack = append(stack, i)
		case ')', ']', '}':
			if n := len(stack); n > 0 {
				match[i], match[stack[n-1]] = stack[n-1], i
				stack = stack[:n-1]
			}
		}
	}
	return match
}

// filterFuncs are the filters replaced by Render's own functions: tojson, and string
// (str(x), as printing).
var filterFuncs = map[string]string{"tojson": tojsonFunc, "string": printFunc}

// rewriteFilters turns each "EXPR | tojson(ARGS)" of code into
// "__tether_tojson(EXPR, ARGS)", and "EXPR | string" into "__tether_print(EXPR)". An
// occurrence whose operand cannot be found is left to the library's filter.
func rewriteFilters(code string) string {
	skip := 0 // occurrences left alone
	for {
		toks := lex(code)
		match := matchBrackets(toks)
		k, seen := -1, 0
		for i, t := range toks {
			if t.kind == '|' {
				j := next(toks, i+1)
				if j < len(toks) && toks[j].kind == 'i' && filterFuncs[toks[j].text] != "" {
					if seen == skip {
						k = i
						break
					}
					seen++
				}
			}
		}
		if k < 0 {
			return code
		}
		s := operandStart(toks, match, k)
		if s < 0 {
			skip++
			continue
		}
		name := next(toks, k+1)
		end := toks[name].end
		args := ""
		if p := next(toks, name+1); p < len(toks) && toks[p].kind == '(' && match[p] > p {
			args = strings.TrimSpace(code[toks[p].end:toks[match[p]].start])
			end = toks[match[p]].end
		}
		operand := strings.TrimSpace(code[toks[s].start:toks[k].start])
		call := filterFuncs[toks[name].text] + "(" + operand
		if args != "" {
			call += ", " + args
		}
		code = code[:toks[s].start] + call + ")" + code[end:]
	}
}

// keywords are the Jinja words that cannot be called or subscripted.
var keywords = map[string]bool{"not": true, "in": true, "and": true, "or": true, "if": true, "else": true, "is": true}

// next returns the index of the first token from i that is not a space.
func next(toks []token, i int) int {
	for i < len(toks) && toks[i].kind == ' ' {
		i++
	}
	return i
}

// prev returns the index of the last token up to i that is not a space (-1 if none).
func prev(toks []token, i int) int {
	for i >= 0 && toks[i].kind == ' ' {
		i--
	}
	return i
}

// operandStart finds the first token of the operand of the filter whose "|" is token k:
// a primary with its attribute, subscript and call suffixes, and the filters before it
// ("a | list | tojson" applies tojson to "a | list"). -1 if there is none.
func operandStart(toks []token, match []int, k int) int {
	i := prev(toks, k-1)
	for {
		s := chainStart(toks, match, i)
		if s < 0 {
			return -1
		}
		p := prev(toks, s-1)
		if p < 0 || toks[p].kind != '|' {
			return s
		}
		i = prev(toks, p-1) // a filter chain: keep going left
	}
}

// chainStart finds the first token of the postfix expression (primary followed by
// .attr, [subscript] and (call) suffixes) that ends at token i; -1 if none.
func chainStart(toks []token, match []int, i int) int {
	if i < 0 {
		return -1
	}
	for {
		t := toks[i]
		switch t.kind {
		case ')', ']', '}':
			if match[i] < 0 {
				return -1
			}
			i = match[i]
			// A suffix if something a suffix can follow is right before it.
			if p := i - 1; p >= 0 && t.kind != '}' {
				switch toks[p].kind {
				case 'i':
					if keywords[toks[p].text] {
						return i // "not (x)": the group is the primary
					}
					i = p
					continue
				case 's', ')', ']', '}':
					i = p
					continue
				}
			}
			return i
		case 'i', 's', 'n':
			if p := i - 1; p >= 1 && toks[p].kind == '.' {
				i = p - 1
				continue
			}
			return i
		default:
			return -1
		}
	}
}
