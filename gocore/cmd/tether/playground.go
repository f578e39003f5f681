package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/vocab"
)

func init() {
	register("playground", "try a grammar interactively with a tokenizer's vocabulary", runPlayground)
}

// parseDialect parses grammar text in a dialect: "gbnf" (llama.cpp's, the default)
// or "bnf" (bnf_sampler's).
func parseDialect(src, dialect string, opts ...gbnf.Option) (*gbnf.Grammar, error) {
	switch dialect {
	case "", "gbnf":
		return gbnf.Parse(src, opts...)
	case "bnf":
		return gbnf.ParseBNF(src, opts...)
	}
	return nil, fmt.Errorf("unknown dialect %q: expected gbnf or bnf", dialect)
}

const playgroundHelp = `Type text to append it (escapes \n \t \\; <[N]> is the token with id N), or:
  :reset    start over            :undo   take back the last input
  :all      list every allowed token
  :longest  list only the longest per terminal (bnf_sampler's rule, the default)
  :more     next page of the list :help   this text     :quit   leave
`

var playgroundRef = regexp.MustCompile(`<\[(\d+)\]>`)

// runPlayground is an interactive session like bnf_sampler's console playground:
// each input line is appended to the text (or, for <[N]>, token N is accepted), and
// the state is shown: the text so far, whether the grammar can end, the forced
// continuation (the bytes every continuation begins with), and the allowed tokens,
// longest-only or all, a page at a time.
func runPlayground(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("playground", stderr)
	grammarPath := fs.String("grammar", "", "grammar file (required)")
	dialect := fs.String("dialect", "gbnf", "grammar notation: gbnf (llama.cpp) or bnf (bnf_sampler)")
	root := fs.String("root", "", "start rule (default: root for gbnf; start, else the first rule, for bnf)")
	tokPath := fs.String("tokenizer", "", "Hugging Face tokenizer.json (required)")
	pageSize := fs.Int("page", 20, "tokens listed per page")
	all := fs.Bool("all", false, "list every allowed token, not only the longest per terminal")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *grammarPath == "" || *tokPath == "" {
		return usageError("--grammar and --tokenizer are required")
	}
	if *pageSize < 1 {
		return usageError("--page must be at least 1")
	}
	src, err := os.ReadFile(*grammarPath)
	if err != nil {
		return usageError("%v", err)
	}
	var opts []gbnf.Option
	if *root != "" {
		opts = append(opts, gbnf.WithRoot(*root))
	}
	g, err := parseDialect(string(src), *dialect, opts...)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("%s: invalid grammar: %w", *grammarPath, err)}
	}
	v, err := vocab.LoadFile(*tokPath)
	if err != nil {
		return usageError("%v", err)
	}
	gr, err := engine.Compile(g, v)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("%s: %w", *grammarPath, err)}
	}
	p := &playground{g: gr, v: v, out: stdout, page: *pageSize, all: *all}
	p.restart()
	fmt.Fprintf(stdout, "tether playground: %s (%s) with %s (%d tokens). :help for commands.\n",
		*grammarPath, *dialect, *tokPath, v.Size())
	p.show()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<16), 1<<20)
	for {
		fmt.Fprint(stdout, "> ")
		if !in.Scan() {
			fmt.Fprintln(stdout)
			return in.Err()
		}
		line := strings.TrimRight(in.Text(), "\r")
		switch strings.TrimSpace(line) {
		case ":quit", ":q", ":exit":
			return nil
		case ":help":
			fmt.Fprint(stdout, playgroundHelp)
		case ":reset":
			p.inputs = nil
			p.restart()
			fmt.Fprintln(stdout, "reset")
			p.show()
		case ":undo":
			if len(p.inputs) == 0 {
				fmt.Fprintln(stdout, "nothing to undo")
				break
			}
			p.inputs = p.inputs[:len(p.inputs)-1]
			p.restart()
			fmt.Fprintln(stdout, "undone")
			p.show()
		case ":all", ":longest":
			p.all = strings.TrimSpace(line) == ":all"
			p.offset = 0
			p.show()
		case ":more":
			p.more()
		default:
			if strings.HasPrefix(line, ":") {
				fmt.Fprintf(stdout, "unknown command %s (:help lists them)\n", line)
				break
			}
			p.input(line)
		}
	}
}

type playground struct {
	g      *engine.Grammar
	v      *vocab.Vocab
	m      *engine.Matcher
	out    io.Writer
	inputs []string // accepted input lines, replayed by :undo
	text   []byte   // the text accepted so far
	page   int
	all    bool
	list   []int // the current listing
	offset int   // where the next page of it starts
}

// restart replays the accepted inputs on a fresh matcher.
func (p *playground) restart() {
	p.m = p.g.NewMatcher()
	p.text = p.text[:0]
	for _, in := range p.inputs {
		if err := p.apply(p.m, in, &p.text); err != nil {
			// Every input was accepted once; replaying it cannot fail.
			fmt.Fprintf(p.out, "internal error replaying %q: %v\n", in, err)
		}
	}
}

// apply feeds one input line into m: <[N]> as token N, the rest as text.
func (p *playground) apply(m *engine.Matcher, line string, text *[]byte) error {
	pos := 0
	feedText := func(s string) error {
		b := unescapeInput(s)
		if len(b) == 0 {
			return nil
		}
		if err := m.AcceptBytes(b); err != nil {
			return err
		}
		*text = append(*text, b...)
		return nil
	}
	for _, l := range playgroundRef.FindAllStringSubmatchIndex(line, -1) {
		if err := feedText(line[pos:l[0]]); err != nil {
			return err
		}
		id, err := strconv.Atoi(line[l[2]:l[3]])
		if err != nil || id >= p.v.Size() {
			return fmt.Errorf("token %s is outside the vocabulary (%d tokens)", line[l[0]:l[1]], p.v.Size())
		}
		if err := m.AcceptToken(id); err != nil {
			return err
		}
		*text = append(*text, p.v.TokenBytes(id)...)
		pos = l[1]
	}
	return feedText(line[pos:])
}

// input tries a line on a copy of the matcher and keeps it only if it is accepted.
func (p *playground) input(line string) {
	c := p.m.Clone()
	text := append([]byte(nil), p.text...)
	if err := p.apply(c, line, &text); err != nil {
		fmt.Fprintf(p.out, "rejected: %v (the input was not applied)\n", err)
		return
	}
	p.m, p.text = c, text
	p.inputs = append(p.inputs, line)
	p.show()
}

// unescapeInput turns \n, \t, \r and \\ in typed text into their bytes.
func unescapeInput(s string) []byte {
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case 'n':
				b = append(b, '\n')
				i++
				continue
			case 't':
				b = append(b, '\t')
				i++
				continue
			case 'r':
				b = append(b, '\r')
				i++
				continue
			case '\\':
				b = append(b, '\\')
				i++
				continue
			}
		}
		b = append(b, s[i])
	}
	return b
}

// show prints the state and the first page of allowed tokens.
func (p *playground) show() {
	fmt.Fprintf(p.out, "text: %s\n", strconv.Quote(string(p.text)))
	end := "no"
	if p.m.CanEnd() {
		end = "yes"
	}
	fmt.Fprintf(p.out, "can end: %s\n", end)
	list, err := p.m.PossibleTokens(!p.all)
	if err != nil {
		fmt.Fprintf(p.out, "allowed tokens: %v\n", err)
		p.list = nil
		return
	}
	fmt.Fprintf(p.out, "forced: %s\n", p.forced(list))
	p.list, p.offset = list, 0
	p.more()
}

// more prints the next page of the listing.
func (p *playground) more() {
	mode := "longest only"
	if p.all {
		mode = "all"
	}
	if p.offset >= len(p.list) {
		if len(p.list) == 0 {
			fmt.Fprintf(p.out, "allowed tokens (%s): none\n", mode)
		} else {
			fmt.Fprintf(p.out, "allowed tokens (%s): no more (%d in all)\n", mode, len(p.list))
		}
		return
	}
	end := min(p.offset+p.page, len(p.list))
	fmt.Fprintf(p.out, "allowed tokens (%s): %d, showing %d-%d\n", mode, len(p.list), p.offset+1, end)
	for _, id := range p.list[p.offset:end] {
		fmt.Fprintf(p.out, "  <[%d]> %s%s\n", id, strconv.Quote(string(p.v.TokenBytes(id))), p.tag(id))
	}
	p.offset = end
	if end < len(p.list) {
		fmt.Fprintln(p.out, "  (:more for the next page)")
	}
}

func (p *playground) tag(id int) string {
	switch {
	case p.v.IsEOG(id):
		return " (end)"
	case p.v.IsSpecial(id):
		return " (special)"
	}
	return ""
}

// forced returns the bytes every continuation begins with, quoted: byte by byte
// while exactly one byte can come next and the grammar cannot end, cut to what
// every allowed token agrees with (token-level elements allow tokens that take no
// part in the text-level analysis).
func (p *playground) forced(allowed []int) string {
	var f []byte
	m := p.m.Clone()
	for len(f) < 256 && !m.CanEnd() {
		var only *engine.Matcher
		n := 0
		for b := 0; b < 256 && n < 2; b++ {
			c := m.Clone()
			if c.AcceptBytes([]byte{byte(b)}) == nil {
				n++
				only = c
				if n == 1 {
					f = append(f, byte(b))
				}
			}
		}
		if n != 1 {
			if n > 1 {
				f = f[:len(f)-1]
			}
			break
		}
		m = only
	}
	for _, id := range allowed {
		t := p.v.TokenBytes(id)
		if len(t) == 0 {
			f = nil
			break
		}
		k := 0
		for k < len(t) && k < len(f) && t[k] == f[k] {
			k++
		}
		if k < len(t) && k < len(f) {
			f = f[:k]
		}
	}
	if len(f) == 0 {
		return "(none)"
	}
	return strconv.Quote(string(f))
}
