package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/schema"
	"github.com/tetherlm/tether/gocore/schema/schemabench"
	"github.com/tetherlm/tether/gocore/tokenizer"
	"github.com/tetherlm/tether/gocore/vocab"
)

func init() {
	registerSection("schema_cases", runSchemaCases)
	registerSection("schema_conversion", runSchemaConversion)
}

// llamaSchemaOptions read schemas as llama.cpp does; its test vectors expect that.
var llamaSchemaOptions = []schema.Option{schema.LlamaCppCompat()}

// runSchemaCases: each schema converts (as llama.cpp reads it; keywords llama.cpp
// ignores, such as uniqueItems, are ignored leniently) and its grammar accepts
// every valid instance and refuses every invalid one.
func runSchemaCases(raw json.RawMessage) (*sectionResult, error) {
	var cases []struct {
		Name    string          `json:"name"`
		Schema  json.RawMessage `json:"schema"`
		Valid   []string        `json:"valid"`
		Invalid []string        `json:"invalid"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		return nil, err
	}
	r := &sectionResult{}
	for _, c := range cases {
		g, _, err := schema.FromJSONSchema(c.Schema, llamaSchemaOptions...)
		if err != nil {
			g, _, err = schema.FromJSONSchema(c.Schema, append(llamaSchemaOptions, schema.Lenient())...)
		}
		if err != nil {
			r.check(false, fmt.Sprintf("%s: %v", c.Name, err))
			continue
		}
		judge := func(s string, want bool, kind string) {
			m, v, err := validatorFor(g, "", s, false)
			ok := err == nil
			if ok {
				_, ferr := feedInput(m, v, s, false)
				ok = (ferr == nil && m.CanEnd()) == want
			}
			r.check(ok, fmt.Sprintf("%s: %s %q", c.Name, kind, s))
		}
		for _, s := range c.Valid {
			judge(s, true, "valid")
		}
		for _, s := range c.Invalid {
			judge(s, false, "invalid")
		}
	}
	return r, nil
}

// runSchemaConversion: "ok" schemas convert to a grammar that compiles, "fail"
// schemas are refused with a *schema.SchemaError.
func runSchemaConversion(raw json.RawMessage) (*sectionResult, error) {
	var cases []struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Expect string          `json:"expect"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		return nil, err
	}
	r := &sectionResult{}
	for _, c := range cases {
		g, _, err := schema.FromJSONSchema(c.Schema, llamaSchemaOptions...)
		if err == nil {
			_, _, err = validatorFor(g, "", "", false)
		}
		r.check((err == nil) == (c.Expect == "ok"), fmt.Sprintf("%s: expected %s, got %v", c.Name, c.Expect, err))
	}
	return r, nil
}

// runMaskbench runs a JSONSchemaBench corpus and prints its summary; with a
// tokenizer it also times masks along the valid instances. It fails (exit 1) if
// any invalid instance was accepted.
func runMaskbench(path, tokenizerPath string, opts []schema.Option, stdout, stderr io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return usageError("%v", err)
	}
	defer f.Close()
	bo := schemabench.Options{Schema: opts}
	if tokenizerPath != "" {
		v, err := vocab.LoadFile(tokenizerPath)
		if err != nil {
			return usageError("%v", err)
		}
		tok, err := tokenizer.FromFile(tokenizerPath)
		if err != nil {
			return usageError("%v", err)
		}
		defer tok.Close()
		bo.Vocab = engine.Vocabulary(v)
		bo.Encode = func(s string) ([]int, error) {
			ids, err := tok.Encode(s, false)
			out := make([]int, len(ids))
			for i, id := range ids {
				out[i] = int(id)
			}
			return out, err
		}
	}
	s, err := schemabench.Run(f, bo)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	if s.InvalidAccepted > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d invalid instances accepted", s.InvalidAccepted)}
	}
	return nil
}
