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
//	            [--lenient] [--strict-objects] [--llamacpp] [--exact-types]
//	            [--draft 2020-12|2019-09|draft-07|draft-06|draft-04] [--resource URI=FILE ...]
//
// With --lenient, keywords that cannot be enforced are listed on stderr.
// --resource gives a document the schema's references may name (repeatable).
func runGBNF(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("gbnf", stderr)
	schemaFile := fs.String("json-schema", "", "JSON Schema file to convert ('-' for stdin)")
	pattern := fs.String("regex", "", "regular expression (Go syntax) to convert; the text must match it in full")
	wsMode := fs.String("whitespace", "bounded", "whitespace between JSON tokens: bounded (default, as in Python: a space or newline with limited indentation), compact or flexible (unbounded)")
	lenient := fs.Bool("lenient", false, "ignore keywords that cannot be enforced (listed on stderr) instead of failing")
	strict := fs.Bool("strict-objects", false, "objects allow only the properties they list unless additionalProperties says otherwise")
	llama := fs.Bool("llamacpp", false, "read schemas as llama.cpp does (strict objects, {} is any object, 16-digit integers)")
	exact := fs.Bool("exact-types", false, "a schema without \"type\" accepts every type whose keywords it satisfies (default: the types its keywords are about)")
	draft := fs.String("draft", "", "dialect of a schema whose $schema names none: 2020-12 (default), 2019-09, draft-07, draft-06, draft-04")
	var resources resourceFlag
	fs.Var(&resources, "resource", "URI=FILE: a document the schema's $ref may name (repeatable; nothing is fetched)")
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
	if *exact {
		opts = append(opts, schema.ExactTypes())
	}
	if *draft != "" {
		d, ok := map[string]schema.Draft{"2020-12": schema.Draft2020, "2019-09": schema.Draft2019, "draft-07": schema.Draft7,
			"draft-06": schema.Draft6, "draft-04": schema.Draft4}[*draft]
		if !ok {
			return usageError("--draft must be 2020-12, 2019-09, draft-07, draft-06 or draft-04, not %q", *draft)
		}
		opts = append(opts, schema.WithDraft(d))
	}
	if len(resources) > 0 {
		opts = append(opts, schema.WithResources(resources))
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

// resourceFlag collects --resource URI=FILE.
type resourceFlag map[string][]byte

func (r *resourceFlag) String() string { return "" }

func (r *resourceFlag) Set(v string) error {
	uri, file, ok := strings.Cut(v, "=")
	if !ok || uri == "" || file == "" {
		return fmt.Errorf("want URI=FILE, not %q", v)
	}
	data, err := readInput(file)
	if err != nil {
		return err
	}
	if *r == nil {
		*r = resourceFlag{}
	}
	(*r)[uri] = data
	return nil
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
