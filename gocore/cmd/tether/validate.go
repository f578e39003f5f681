package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
)

func init() {
	register("validate", "check text against a GBNF grammar", runValidate)
}

// runValidate checks that a grammar accepts a whole input and can end there.
// Exit status: 0 accepted, 1 rejected (with the byte offset and context of the first
// failure), 2 bad usage or an invalid grammar (with line:col).
func runValidate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("validate", stderr)
	grammarPath := fs.String("grammar", "", "GBNF grammar file (required)")
	root := fs.String("root", "", "start rule (default root)")
	input := fs.String("input", "", "file holding the text to check")
	text := fs.String("text", "", "text to check (instead of --input)")
	refs := fs.Bool("token-refs", false, "read <[N]> in the input as the single token with id N")
	schemaPath := fs.String("json-schema", "", "JSON Schema file to convert and check against (instead of --grammar)")
	dialect := fs.String("dialect", "gbnf", "grammar notation: gbnf (llama.cpp) or bnf (bnf_sampler)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *schemaPath != "" {
		if *grammarPath != "" {
			return usageError("give --grammar or --json-schema, not both")
		}
		g, err := schemaGrammarFile(*schemaPath)
		if err != nil {
			return err
		}
		*grammarPath = g
	}
	if *grammarPath == "" {
		return usageError("--grammar (or --json-schema) is required")
	}
	textSet := false
	fs.Visit(func(f *flag.Flag) { textSet = textSet || f.Name == "text" })
	if textSet == (*input != "") {
		return usageError("give exactly one of --input and --text")
	}
	src, err := os.ReadFile(*grammarPath)
	if err != nil {
		return usageError("%v", err)
	}
	if *input != "" {
		data, err := os.ReadFile(*input)
		if err != nil {
			return usageError("%v", err)
		}
		*text = string(data)
	}
	m, v, err := validatorForDialect(string(src), *dialect, *root, *text, *refs)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("%s: invalid grammar: %w", *grammarPath, err)}
	}
	if off, err := feedInput(m, v, *text, *refs); err != nil {
		var le *engine.LimitError
		if errors.As(err, &le) {
			// Not a verdict on the text: the grammar is too costly to follow.
			return &exitError{code: 2, err: fmt.Errorf("at byte offset %d (%s): %w", off, lineCol(*text, off), err)}
		}
		return &exitError{code: 1, err: fmt.Errorf("rejected at byte offset %d (%s): %v\n%s",
			off, lineCol(*text, off), err, failureContext(*text, off))}
	}
	if !m.CanEnd() {
		off := len(*text)
		return &exitError{code: 1, err: fmt.Errorf("rejected at byte offset %d (%s): the input ends, but the grammar expects %s\n%s",
			off, lineCol(*text, off), m.Expected(), failureContext(*text, off))}
	}
	fmt.Fprintf(stdout, "ok: %d bytes accepted\n", len(*text))
	return nil
}

var tokenRefRE = regexp.MustCompile(`<\[(\d+)\]>`)

// validatorFor parses and compiles a grammar against a vocabulary with no tokenizer
// behind it (engine.ByteVocabulary): one token per byte, and, below them, as many
// special tokens as the grammar and the input refer to.
func validatorFor(src, root, input string, refs bool) (*engine.Matcher, engine.ByteVocabulary, error) {
	return validatorForDialect(src, "gbnf", root, input, refs)
}

// validatorForDialect is validatorFor for a grammar in the given dialect (see parseDialect).
func validatorForDialect(src, dialect, root, input string, refs bool) (*engine.Matcher, engine.ByteVocabulary, error) {
	var opts []gbnf.Option
	if root != "" {
		opts = append(opts, gbnf.WithRoot(root))
	}
	g, err := parseDialect(src, dialect, opts...)
	if err != nil {
		return nil, engine.ByteVocabulary{}, err
	}
	var more []int
	if refs {
		for _, m := range tokenRefRE.FindAllStringSubmatch(input, -1) {
			if n, err := strconv.Atoi(m[1]); err == nil && n < engine.MaxByteSpecials {
				more = append(more, n)
			}
		}
	}
	v, err := engine.ByteVocabularyFor(g, more...)
	if err != nil {
		return nil, v, err
	}
	gr, err := engine.Compile(g, v)
	if err != nil {
		return nil, v, err
	}
	return gr.NewMatcher(), v, nil
}

// feedInput accepts s into m one byte token at a time; with refs, "<[N]>" is the
// single token N. It returns the byte offset of the first refusal.
func feedInput(m *engine.Matcher, v engine.ByteVocabulary, s string, refs bool) (int, error) {
	pos := 0
	bytesTo := func(end int) (int, error) {
		for ; pos < end; pos++ {
			if err := m.AcceptToken(v.ByteToken(s[pos])); err != nil {
				return pos, err
			}
		}
		return pos, nil
	}
	if refs {
		for _, l := range tokenRefRE.FindAllStringSubmatchIndex(s, -1) {
			if off, err := bytesTo(l[0]); err != nil {
				return off, err
			}
			n, err := strconv.Atoi(s[l[2]:l[3]])
			if err != nil || n >= v.Size() {
				return pos, errors.New("token reference out of range: " + s[l[0]:l[1]])
			}
			if err := m.AcceptToken(n); err != nil {
				return pos, err
			}
			pos = l[1]
		}
	}
	return bytesTo(len(s))
}

func lineCol(s string, off int) string {
	line := 1 + strings.Count(s[:off], "\n")
	col := off - strings.LastIndexByte(s[:off], '\n')
	return fmt.Sprintf("line %d, col %d", line, col)
}

// failureContext shows up to 30 bytes either side of off, marking the spot.
func failureContext(s string, off int) string {
	lo, hi := max(0, off-30), min(len(s), off+30)
	return fmt.Sprintf("  %s ⟨here⟩ %s", strconv.Quote(s[lo:off]), strconv.Quote(s[off:hi]))
}
