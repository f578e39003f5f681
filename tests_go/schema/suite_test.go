package schema_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/schema"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// The official JSON-Schema-Test-Suite (../shared/json-schema-test-suite): every
// schema of the draft2020-12 core, its optional/format files and draft7 core is
// converted in default mode, and every instance judged (its JSON text accepted,
// then the grammar able to end). An invalid instance accepted is a failure; a
// refusal or a valid instance rejected is coverage, printed as a table.

type suiteGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

// suiteStats is one row of the table.
type suiteStats struct {
	name                               string
	schemas, compiled, refused         int
	validAccepted, validRejected       int
	invalidAccepted, invalidRejected   int
	refusedBy                          map[string]int // keyword -> schemas refused for it
	refusedFiles                       map[string]int // file -> schemas refused
	validRejectedIn                    map[string]int // file -> valid instances rejected
	invalidAcceptedCases, refusalNotes []string
	validRejectedCases                 []string
}

// suiteTexts are the JSON texts an instance is judged in: as written in the
// suite (compacted), with keys sorted, and indented. An invalid instance must
// be rejected in each; a valid one counts as accepted if any is accepted.
func suiteTexts(raw json.RawMessage) []string {
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil
	}
	texts := []string{compact.String()}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) == nil {
		var sorted bytes.Buffer
		enc := json.NewEncoder(&sorted)
		enc.SetEscapeHTML(false)
		if enc.Encode(v) == nil {
			if s := strings.TrimSuffix(sorted.String(), "\n"); s != texts[0] {
				texts = append(texts, s)
			}
		}
	}
	var indented bytes.Buffer
	if json.Indent(&indented, compact.Bytes(), "", "  ") == nil && indented.String() != texts[0] {
		texts = append(texts, indented.String())
	}
	return texts
}

func runSuiteFiles(t *testing.T, name string, files []string, opts ...schema.Option) suiteStats {
	st := suiteStats{name: name, refusedBy: map[string]int{}, refusedFiles: map[string]int{}, validRejectedIn: map[string]int{}}
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var groups []suiteGroup
		require.NoError(t, json.Unmarshal(data, &groups), file)
		base := filepath.Base(file)
		for _, g := range groups {
			st.schemas++
			gr, _, _, err := schema.Grammar(g.Schema, opts...)
			var cg *engine.Grammar
			if err == nil {
				cg, err = engine.Compile(gr, engine.ByteVocabulary{})
			}
			if err != nil {
				st.refused++
				kw := "(compile)"
				var se *schema.SchemaError
				if errors.As(err, &se) {
					kw = se.Keyword
					if kw == "" {
						kw = "(schema)"
					}
				}
				st.refusedBy[kw]++
				st.refusedFiles[base]++
				st.refusalNotes = append(st.refusalNotes, fmt.Sprintf("%s / %s: %v", base, g.Description, err))
				continue
			}
			st.compiled++
			m := cg.NewMatcher()
			for _, tc := range g.Tests {
				accepted := false
				for _, text := range suiteTexts(tc.Data) {
					m.Reset()
					ok := m.AcceptBytes([]byte(text)) == nil && m.CanEnd()
					accepted = accepted || ok
					if ok && !tc.Valid {
						st.invalidAcceptedCases = append(st.invalidAcceptedCases,
							fmt.Sprintf("%s / %s / %s: %s accepted; schema %s", base, g.Description, tc.Description, text, compactJSON(g.Schema)))
					}
				}
				switch {
				case tc.Valid && accepted:
					st.validAccepted++
				case tc.Valid:
					st.validRejected++
					st.validRejectedIn[base]++
					st.validRejectedCases = append(st.validRejectedCases, fmt.Sprintf("%s / %s / %s: %s; schema %s", base, g.Description, tc.Description, compactJSON(tc.Data), compactJSON(g.Schema)))
				case accepted:
					st.invalidAccepted++
				default:
					st.invalidRejected++
				}
			}
		}
	}
	return st
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func topCounts(m map[string]int, n int) string {
	type kv struct {
		k string
		v int
	}
	var xs []kv
	for k, v := range m {
		xs = append(xs, kv{k, v})
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i].v > xs[j].v || xs[i].v == xs[j].v && xs[i].k < xs[j].k })
	var parts []string
	for i, x := range xs {
		if i == n {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", x.k, x.v))
	}
	return strings.Join(parts, ", ")
}

// TestJSONSchemaTestSuite runs the official suite; see the comment above.
func TestJSONSchemaTestSuite(t *testing.T) {
	root := testdata.Shared(t, "json-schema-test-suite/tests")
	glob := func(pat string) []string {
		fs, err := filepath.Glob(filepath.Join(root, pat))
		require.NoError(t, err)
		require.NotEmpty(t, fs, pat)
		return fs
	}
	// The draft 7 files do not all say "$schema": they are read as draft 7,
	// as a validator running this suite would.
	sets := []struct {
		name, pattern string
		draft         schema.Draft
	}{
		{"draft2020-12 core", "draft2020-12/*.json", schema.Draft2020},
		{"draft2020-12 optional/format", "draft2020-12/optional/format/*.json", schema.Draft2020},
		{"draft7 core", "draft7/*.json", schema.Draft7},
		{"draft7 optional/format", "draft7/optional/format/*.json", schema.Draft7},
	}
	// The suite's remote documents, served at http://localhost:1234/ by its
	// own runner, are given as resources (nothing is fetched).
	remotes := map[string][]byte{}
	rdir := testdata.Shared(t, "json-schema-test-suite/remotes")
	require.NoError(t, filepath.WalkDir(rdir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		rel, err := filepath.Rel(rdir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		remotes["http://localhost:1234/"+filepath.ToSlash(rel)] = data
		return err
	}))
	require.NotEmpty(t, remotes)
	var rows []suiteStats
	for _, s := range sets {
		rows = append(rows, runSuiteFiles(t, s.name, glob(s.pattern), schema.WithDraft(s.draft), schema.WithResources(remotes)))
	}
	// ExactTypes: untyped schemas accept every type, as JSON Schema reads them
	for _, s := range sets {
		rows = append(rows, runSuiteFiles(t, s.name+" +ExactTypes", glob(s.pattern), schema.WithDraft(s.draft), schema.WithResources(remotes), schema.ExactTypes()))
	}
	var tb strings.Builder
	fmt.Fprintf(&tb, "\n%-42s %8s %8s %8s %9s %9s %9s %9s\n", "set", "schemas", "compiled", "refused", "valid-acc", "valid-rej", "inval-acc", "inval-rej")
	for _, r := range rows {
		fmt.Fprintf(&tb, "%-42s %8d %8d %8d %9d %9d %9d %9d\n", r.name, r.schemas, r.compiled, r.refused,
			r.validAccepted, r.validRejected, r.invalidAccepted, r.invalidRejected)
	}
	for _, r := range rows {
		fmt.Fprintf(&tb, "%s refusals by keyword: %s\n", r.name, topCounts(r.refusedBy, 30))
		fmt.Fprintf(&tb, "%s refusals by file: %s\n", r.name, topCounts(r.refusedFiles, 40))
		fmt.Fprintf(&tb, "%s valid rejected by file: %s\n", r.name, topCounts(r.validRejectedIn, 40))
	}
	t.Log(tb.String())
	if os.Getenv("TETHER_SUITE_VERBOSE") != "" {
		for _, r := range rows {
			for _, n := range r.refusalNotes {
				t.Logf("refused: %s: %s", r.name, n)
			}
			for _, n := range r.validRejectedCases {
				t.Logf("valid rejected: %s: %s", r.name, n)
			}
		}
	}
	for _, r := range rows {
		if n := len(r.invalidAcceptedCases); n > 0 {
			t.Errorf("%s: %d invalid instances accepted, the first:\n%s", r.name, n, strings.Join(r.invalidAcceptedCases[:min(n, 10)], "\n"))
		}
	}
}
