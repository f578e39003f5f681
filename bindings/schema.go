package bindings

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tetherlm/tether/gocore/safecall"
	"github.com/tetherlm/tether/gocore/schema"
	"github.com/tetherlm/tether/gocore/session"
)

// schemaOptions is the JSON form of the converter's options that python/tether sends.
type schemaOptions struct {
	Whitespace    string                     `json:"whitespace"`
	Lenient       bool                       `json:"lenient"`
	StrictObjects bool                       `json:"strict_objects"`
	ExactTypes    bool                       `json:"exact_types"`
	Draft         string                     `json:"draft"`
	Resources     map[string]json.RawMessage `json:"resources"`
}

// drafts are the dialect names schemaOptions.Draft takes.
var drafts = map[string]schema.Draft{
	"2020-12": schema.Draft2020, "2019-09": schema.Draft2019, "draft-07": schema.Draft7,
	"draft-06": schema.Draft6, "draft-04": schema.Draft4,
}

// SchemaToGBNF converts a JSON Schema (JSON text) to GBNF. optionsJSON holds
// {"whitespace": "flexible"|"compact"|"bounded", "lenient": bool, "strict_objects": bool,
// "exact_types": bool, "draft": "2020-12"|"2019-09"|"draft-07"|"draft-06"|"draft-04",
// "resources": {uri: schema}}.
// It returns {"grammar": "...", "ignored": [{"keyword", "pointer", "reason"}]}.
func SchemaToGBNF(schemaJSON, optionsJSON string) (string, error) {
	return safecall.Do("SchemaToGBNF", func() (string, error) {
		opts, err := parseSchemaOptions(optionsJSON)
		if err != nil {
			return "", err
		}
		g, ignored, err := schema.FromJSONSchema([]byte(schemaJSON), opts...)
		if err != nil {
			return "", schemaError(err)
		}
		b, err := json.Marshal(struct {
			Grammar string       `json:"grammar"`
			Ignored []ignoredKey `json:"ignored"`
		}{g, ignoredKeys(ignored)})
		return string(b), err
	})
}

// GrammarFromSchema converts a JSON Schema (JSON text; optionsJSON as SchemaToGBNF's)
// and compiles the grammar for a vocabulary in one call: the grammar is parsed once and
// its text stays in Go (GrammarSource returns it). maxStacks is GrammarCompile's.
// It returns {"handle": h, "ignored": [{"keyword", "pointer", "reason"}]}.
func GrammarFromSchema(vocabHandle int64, schemaJSON, optionsJSON string, maxStacks int) (string, error) {
	return safecall.Do("GrammarFromSchema", func() (string, error) {
		v, err := vocabForCompile(vocabHandle, maxStacks)
		if err != nil {
			return "", err
		}
		opts, err := parseSchemaOptions(optionsJSON)
		if err != nil {
			return "", err
		}
		c, err := schema.Convert([]byte(schemaJSON), opts...)
		if err != nil {
			return "", schemaError(err)
		}
		h, err := addCompiled(v, session.Spec{Src: c.Text(), MaxStacks: maxStacks}, c.Grammar)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(struct {
			Handle  int64        `json:"handle"`
			Ignored []ignoredKey `json:"ignored"`
		}{h, ignoredKeys(c.Ignored)})
		return string(b), err
	})
}

type ignoredKey struct {
	Keyword string `json:"keyword"`
	Pointer string `json:"pointer"`
	Reason  string `json:"reason"`
}

func ignoredKeys(ignored []schema.Ignored) []ignoredKey {
	out := []ignoredKey{}
	for _, i := range ignored {
		out = append(out, ignoredKey{i.Keyword, i.Pointer, i.Reason})
	}
	return out
}

// parseSchemaOptions reads the converter options python/tether sends ("" for the defaults).
func parseSchemaOptions(optionsJSON string) ([]schema.Option, error) {
	var o schemaOptions
	if optionsJSON != "" {
		if err := json.Unmarshal([]byte(optionsJSON), &o); err != nil {
			return nil, fmt.Errorf("schema options: %v", err)
		}
	}
	var opts []schema.Option
	if o.Whitespace != "" {
		ws, ok := schema.ParseWhitespace(o.Whitespace)
		if !ok {
			return nil, fmt.Errorf("schema options: whitespace %q is not one of flexible, compact, bounded", o.Whitespace)
		}
		opts = append(opts, schema.WithWhitespace(ws))
	}
	if o.Lenient {
		opts = append(opts, schema.Lenient())
	}
	if o.StrictObjects {
		opts = append(opts, schema.StrictObjects())
	}
	if o.ExactTypes {
		opts = append(opts, schema.ExactTypes())
	}
	if o.Draft != "" {
		d, ok := drafts[o.Draft]
		if !ok {
			return nil, fmt.Errorf("schema options: draft %q is not one of 2020-12, 2019-09, draft-07, draft-06, draft-04", o.Draft)
		}
		opts = append(opts, schema.WithDraft(d))
	}
	if len(o.Resources) > 0 {
		docs := make(map[string][]byte, len(o.Resources))
		for u, d := range o.Resources {
			docs[u] = d
		}
		opts = append(opts, schema.WithResources(docs))
	}
	return opts, nil
}

// RegexToGBNF converts a regular expression (Go RE2 syntax, matched in full) to GBNF.
func RegexToGBNF(pattern string) (string, error) {
	return safecall.Do("RegexToGBNF", func() (string, error) {
		g, err := schema.FromRegex(pattern)
		if err != nil {
			return "", structured{Kind: "grammar", Message: err.Error()}.encode()
		}
		return g, nil
	})
}

// schemaError makes Python raise SchemaError with the keyword and JSON pointer.
func schemaError(err error) error {
	s := structured{Kind: "schema", Message: err.Error()}
	var se *schema.SchemaError
	if errors.As(err, &se) {
		ptr := se.Pointer
		s.Keyword, s.Pointer = se.Keyword, &ptr
	}
	return s.encode()
}
