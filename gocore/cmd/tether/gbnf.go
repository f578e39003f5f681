package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tetherlm/tether/gocore/schema"
)

func init() {
	register("gbnf", "print the GBNF grammar of a JSON Schema (--json-schema FILE) or a regex (--regex PATTERN)", runGBNF)
}

// runGBNF converts a JSON Schema or a regular expression into GBNF and prints it:
//
//	tether gbnf (--json-schema FILE | --regex PATTERN) [--whitespace flexible|compact|bounded]
//	            [--lenient] [--strict-objects] [--llamacpp]
//
// With --lenient, keywords that cannot be enforced are listed on stderr.
func runGBNF(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("gbnf", stderr)
	schemaFile := fs.String("json-schema", "", "JSON Schema file to convert ('-' for stdin)")
	pattern := fs.String("regex", "", "regular expression (Go syntax) to convert; the text must match it in full")
	wsMode := fs.String("whitespace", "bounded", "whitespace between JSON tokens: bounded (default, as in Python: a space or newline with limited indentation), compact or flexible (unbounded)")
	lenient := fs.Bool("lenient", false, "ignore keywords that cannot be enforced (listed on stderr) instead of failing")
	strict := fs.Bool("strict-objects", false, "objects allow only the properties they list unless additionalProperties says otherwise")
	llama := fs.Bool("llamacpp", false, "read schemas as llama.cpp does (strict objects, {} is any object, 16-digit integers)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*schemaFile == "") == (*pattern == "") {
		return usageError("give exactly one of --json-schema FILE or --regex PATTERN")
	}
	opts, err := schemaOptions(*wsMode, *lenient, *strict, *llama)
	if err != nil {
		return err
	}
	var g string
	if *pattern != "" {
		if g, err = schema.FromRegex(*pattern); err != nil {
			return &exitError{code: 2, err: err}
		}
	} else {
		data, err := readInput(*schemaFile)
		if err != nil {
			return usageError("%v", err)
		}
		var ignored []schema.Ignored
		g, ignored, err = schema.FromJSONSchema(data, opts...)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		for _, ig := range ignored {
			fmt.Fprintf(stderr, "tether gbnf: ignored %s\n", ig)
		}
	}
	_, err = io.WriteString(stdout, g)
	return err
}

// schemaOptions turns the shared schema flags into converter options.
func schemaOptions(ws string, lenient, strict, llama bool) ([]schema.Option, error) {
	mode, ok := schema.ParseWhitespace(ws)
	if !ok {
		return nil, usageError("--whitespace must be flexible, compact or bounded, not %q", ws)
	}
	opts := []schema.Option{schema.WithWhitespace(mode)}
	if lenient {
		opts = append(opts, schema.Lenient())
	}
	if strict {
		opts = append(opts, schema.StrictObjects())
	}
	if llama {
		opts = append(opts, schema.LlamaCppCompat())
	}
	return opts, nil
}

// readInput reads a file, or stdin for "-".
func readInput(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(os.Stdin)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	return data, nil
}

// schemaGrammarFile converts a JSON Schema file and writes the grammar to a
// temporary file (for validate --json-schema), returning its path.
func schemaGrammarFile(path string) (string, error) {
	data, err := readInput(path)
	if err != nil {
		return "", usageError("%v", err)
	}
	g, _, err := schema.FromJSONSchema(data)
	if err != nil {
		return "", &exitError{code: 2, err: err}
	}
	f, err := os.CreateTemp("", "tether-schema-*.gbnf")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.WriteString(g); err != nil {
		return "", err
	}
	return f.Name(), nil
}
