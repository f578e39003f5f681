package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

func init() {
	registerSection("grammar_cases", runGrammarCases)
	registerSection("grammar_files", runGrammarCases)
	registerSection("grammar_must_fail", runGrammarMustFail)
	registerSection("grammar_must_parse", runGrammarMustParse)
}

// sectionResult is the summary of one section of llamacpp_cases.json.
type sectionResult struct {
	Passed   int      `json:"passed"`
	Failed   int      `json:"failed"`
	Failures []string `json:"failures"`
}

func (r *sectionResult) check(ok bool, name string) {
	if ok {
		r.Passed++
	} else {
		r.Failed++
		r.Failures = append(r.Failures, name)
	}
}

// llamacppSections maps a section of llamacpp_cases.json to its runner. Other files
// add theirs (e.g. the schema sections) from init functions with registerSection.
var llamacppSections = map[string]func(raw json.RawMessage) (*sectionResult, error){}

// registerSection adds the runner of a section of llamacpp_cases.json; init
// functions only.
func registerSection(name string, run func(raw json.RawMessage) (*sectionResult, error)) {
	if _, dup := llamacppSections[name]; dup {
		panic("tether: conformance section registered twice: " + name)
	}
	llamacppSections[name] = run
}

// runLlamacppConformance runs every section of llamacpp_cases.json that has a runner
// and prints {section: {passed, failed, failures}}; ok is false if anything failed.
// Sections without a runner are named on stderr.
func runLlamacppConformance(path string, stdout, stderr io.Writer) (ok bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, usageError("%v", err)
	}
	var file map[string]json.RawMessage
	if err := json.Unmarshal(data, &file); err != nil {
		return false, usageError("%s: %v", path, err)
	}
	names := make([]string, 0, len(file))
	for n := range file {
		names = append(names, n)
	}
	sort.Strings(names)
	results := map[string]*sectionResult{}
	var skipped []string
	failed := 0
	for _, n := range names {
		run, ok := llamacppSections[n]
		if !ok {
			if n != "source" {
				skipped = append(skipped, n)
			}
			continue
		}
		r, err := run(file[n])
		if err != nil {
			return false, usageError("%s: section %s: %v", path, n, err)
		}
		if r.Failures == nil {
			r.Failures = []string{}
		}
		results[n] = r
		failed += r.Failed
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(results); err != nil {
		return false, err
	}
	if len(skipped) > 0 {
		fmt.Fprintf(stderr, "tether conformance: no runner yet for sections %v\n", skipped)
	}
	return failed == 0, nil
}

type grammarVector struct {
	Name          string   `json:"name"`
	Grammar       string   `json:"grammar"`
	Valid         []string `json:"valid"`
	Invalid       []string `json:"invalid"`
	UsesTokenRefs bool     `json:"uses_token_refs"`
	Why           string   `json:"why"`
}

// runGrammarCases: every valid string is accepted whole and the grammar can end;
// every invalid one is refused or cannot end. A grammar with no strings (the "hang"
// vector) passes if it compiles or is refused, within a second.
func runGrammarCases(raw json.RawMessage) (*sectionResult, error) {
	var cases []grammarVector
	if err := json.Unmarshal(raw, &cases); err != nil {
		return nil, err
	}
	r := &sectionResult{}
	for _, c := range cases {
		start := time.Now()
		if len(c.Valid)+len(c.Invalid) == 0 {
			_, _, _ = validatorFor(c.Grammar, "", "", false)
			r.check(time.Since(start) < time.Second, c.Name+": took over a second")
			continue
		}
		for _, s := range c.Valid {
			m, v, err := validatorFor(c.Grammar, "", s, c.UsesTokenRefs)
			ok := err == nil
			if ok {
				_, err := feedInput(m, v, s, c.UsesTokenRefs)
				ok = err == nil && m.CanEnd()
			}
			r.check(ok, fmt.Sprintf("%s: valid %q", c.Name, s))
		}
		for _, s := range c.Invalid {
			m, v, err := validatorFor(c.Grammar, "", s, c.UsesTokenRefs)
			ok := err == nil
			if ok {
				_, err := feedInput(m, v, s, c.UsesTokenRefs)
				ok = err != nil || !m.CanEnd()
			}
			r.check(ok, fmt.Sprintf("%s: invalid %q", c.Name, s))
		}
	}
	return r, nil
}

// runGrammarMustFail: the grammar is refused, within a second.
func runGrammarMustFail(raw json.RawMessage) (*sectionResult, error) {
	var cases []grammarVector
	if err := json.Unmarshal(raw, &cases); err != nil {
		return nil, err
	}
	r := &sectionResult{}
	for _, c := range cases {
		start := time.Now()
		_, _, err := validatorFor(c.Grammar, "", "", false)
		if strings.Contains(c.Why, "left recursion") {
			// Divergence (issue 17): tether rewrites left recursion.
			r.check(err == nil && time.Since(start) < time.Second, c.Name)
			continue
		}
		r.check(err != nil && time.Since(start) < time.Second, c.Name)
	}
	return r, nil
}

// runGrammarMustParse: the grammar compiles and gives a first mask.
func runGrammarMustParse(raw json.RawMessage) (*sectionResult, error) {
	var cases []grammarVector
	if err := json.Unmarshal(raw, &cases); err != nil {
		return nil, err
	}
	r := &sectionResult{}
	for _, c := range cases {
		m, _, err := validatorFor(c.Grammar, "", "", false)
		if err == nil {
			_, err = m.AllowedTokens(nil)
		}
		r.check(err == nil, c.Name)
	}
	return r, nil
}
