// Package conformance runs llama.cpp's sampler test vectors
// (shared/conformance/llamacpp_sampling_cases.json) against gocore/sampling.
//
// It owns the file's format and the harness that turns a case into a sampler call; it
// knows nothing about the CLI (gocore/cmd/tether prints its Report) or about grammars.
//
// A case passes when the candidate array after the sampler (and dist(seed=0), when the
// case says so) has the expected size and every surviving token has the expected
// probability within 1e-5. Following the data's README, the comparison is the mapping
// token id -> probability (the data's derived output_token_ids give the expected id of
// each position): the two llama.cpp snapshots differ in output order only. Cases whose
// expectation cannot be reproduced from the data (dist_rng: a generator that is not in
// the data) are reported as skipped with the reason, never as passed.
package conformance

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/tetherlm/tether/gocore/sampling"
)

// Tolerance is llama.cpp's sampler_tester::check tolerance (absolute, strict).
const Tolerance = 1e-5

// File is the JSON document.
type File struct {
	Cases      []Case      `json:"cases"`
	QueueCases []QueueCase `json:"queue_cases"`
}

// Case is one sampler vector.
type Case struct {
	ID                     string                     `json:"id"`
	Sampler                string                     `json:"sampler"`
	Params                 map[string]json.RawMessage `json:"params"`
	InputProbs             []float64                  `json:"input_probs"`
	ExpectedProbs          []float64                  `json:"expected_probs"`
	History                []int                      `json:"history"`
	PostSampler            *string                    `json:"post_sampler"`
	SnapshotSpecificParams map[string]map[string]any  `json:"snapshot_specific_params"`
	Derived                struct {
		OutputTokenIDs []int `json:"output_token_ids"`
	} `json:"derived"`
	Notes string `json:"notes"`
}

// QueueCase is one test_sampler_queue call.
type QueueCase struct {
	ID       string `json:"id"`
	Samplers string `json:"samplers"`
	Params   struct {
		NVocab int     `json:"n_vocab"`
		TopK   int     `json:"top_k"`
		TopP   float64 `json:"top_p"`
		MinP   float64 `json:"min_p"`
	} `json:"params"`
	Expected struct {
		Steps []struct {
			Sampler         string `json:"sampler"`
			ExpectedSize    int    `json:"expected_size"`
			ExpectedFirstID int    `json:"expected_first_id"`
			ExpectedLastID  int    `json:"expected_last_id"`
			IDsAsserted     bool   `json:"ids_asserted"`
		} `json:"steps"`
	} `json:"expected"`
}

// Result is the tally for one sampler.
type Result struct {
	Passed   int       `json:"passed"`
	Failed   int       `json:"failed"`
	Skipped  int       `json:"skipped"`
	Failures []Finding `json:"failures"`
	Skips    []Finding `json:"skips,omitempty"`
}

// Finding names a case and says what happened.
type Finding struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Report maps a sampler name (the data's: top_k, min_p, ..., and "queue" for the
// sampler-queue cases) to its result.
type Report map[string]*Result

// OK reports whether no case failed (skipped cases do not fail the run).
func (r Report) OK() bool {
	for _, res := range r {
		if res.Failed > 0 {
			return false
		}
	}
	return true
}

// Totals sums the results.
func (r Report) Totals() (passed, failed, skipped int) {
	for _, res := range r {
		passed += res.Passed
		failed += res.Failed
		skipped += res.Skipped
	}
	return
}

// Names returns the sampler names in sorted order.
func (r Report) Names() []string {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Load reads and parses the file at path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse parses the JSON document.
func Parse(data []byte) (*File, error) {
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("sampling conformance data: %w", err)
	}
	if len(f.Cases) == 0 && len(f.QueueCases) == 0 {
		return nil, fmt.Errorf("sampling conformance data: no cases")
	}
	return &f, nil
}

// Run runs every case and returns the report.
func Run(f *File) Report {
	rep := Report{}
	get := func(name string) *Result {
		if rep[name] == nil {
			rep[name] = &Result{Failures: []Finding{}}
		}
		return rep[name]
	}
	for _, c := range f.Cases {
		res := get(c.Sampler)
		skip, err := RunCase(c)
		switch {
		case skip != "":
			res.Skipped++
			res.Skips = append(res.Skips, Finding{c.ID, skip})
		case err != nil:
			res.Failed++
			res.Failures = append(res.Failures, Finding{c.ID, err.Error()})
		default:
			res.Passed++
		}
	}
	for _, q := range f.QueueCases {
		res := get("queue")
		if err := RunQueueCase(q); err != nil {
			res.Failed++
			res.Failures = append(res.Failures, Finding{q.ID, err.Error()})
		} else {
			res.Passed++
		}
	}
	return rep
}

func (c Case) f32(name string) (float32, error) {
	raw, ok := c.Params[name]
	if !ok {
		return 0, fmt.Errorf("param %s missing", name)
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("param %s: %v", name, err)
	}
	return float32(v), nil
}

func (c Case) int(name string) (int, error) {
	v, err := c.f32(name)
	return int(v), err
}

func (c Case) intOr(name string, def int) int {
	if _, ok := c.Params[name]; !ok {
		return def
	}
	v, _ := c.int(name)
	return v
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// BuildSampler makes the sampler a case tests.
func BuildSampler(c Case) (sampling.Sampler, error) {
	switch c.Sampler {
	case "temp":
		t, err := c.f32("temp")
		if err != nil {
			return nil, err
		}
		return sampling.NewTemp(t)
	case "temp_ext":
		t, e1 := c.f32("temp")
		d, e2 := c.f32("delta")
		x, e3 := c.f32("exponent")
		if err := firstErr(e1, e2, e3); err != nil {
			return nil, err
		}
		return sampling.NewTempExt(t, d, x)
	case "top_k":
		k, err := c.int("k")
		if err != nil {
			return nil, err
		}
		return sampling.NewTopK(k)
	case "top_p":
		p, err := c.f32("p")
		if err != nil {
			return nil, err
		}
		return sampling.NewTopP(p, c.intOr("min_keep", 0))
	case "min_p":
		p, err := c.f32("p")
		if err != nil {
			return nil, err
		}
		return sampling.NewMinP(p, c.intOr("min_keep", 0))
	case "typical":
		p, err := c.f32("p")
		if err != nil {
			return nil, err
		}
		return sampling.NewTypical(p, c.intOr("min_keep", 0))
	case "xtc":
		p, e1 := c.f32("xtc_probability")
		t, e2 := c.f32("xtc_threshold")
		seed, e3 := c.int("seed")
		if err := firstErr(e1, e2, e3); err != nil {
			return nil, err
		}
		return sampling.NewXTC(p, t, c.intOr("min_keep", 0), uint32(seed))
	case "penalties":
		n, e1 := c.int("penalty_last_n")
		r, e2 := c.f32("penalty_repeat")
		fq, e3 := c.f32("penalty_freq")
		pr, e4 := c.f32("penalty_present")
		if err := firstErr(e1, e2, e3, e4); err != nil {
			return nil, err
		}
		return sampling.NewPenalties(n, r, fq, pr)
	case "dry":
		m, e1 := c.f32("dry_multiplier")
		b, e2 := c.f32("dry_base")
		al, e3 := c.int("dry_allowed_length")
		ln, e4 := c.int("dry_penalty_last_n")
		if err := firstErr(e1, e2, e3, e4); err != nil {
			return nil, err
		}
		var breakers [][]int
		if raw, ok := c.Params["seq_breakers"]; ok {
			if err := json.Unmarshal(raw, &breakers); err != nil {
				return nil, fmt.Errorf("param seq_breakers: %v", err)
			}
		}
		ctx := 0
		for _, sp := range c.SnapshotSpecificParams {
			if v, ok := sp["context_size"].(float64); ok {
				ctx = int(v)
			}
		}
		return sampling.NewDRY(sampling.DRYParams{Multiplier: m, Base: b, AllowedLength: al,
			PenaltyLastN: ln, ContextSize: ctx}, breakers)
	case "top_n_sigma":
		n, err := c.f32("n")
		if err != nil {
			return nil, err
		}
		return sampling.NewTopNSigma(n)
	case "p_less":
		return sampling.NewPLess(), nil
	}
	return nil, fmt.Errorf("unknown sampler %q", c.Sampler)
}

// logf32 is C's logf on a float literal: natural log rounded to float32.
func logf32(p float64) float32 { return float32(math.Log(float64(float32(p)))) }

// RunCase runs one vector. It returns a non-empty skip reason for cases that cannot be
// checked from the data, or an error describing the mismatch.
func RunCase(c Case) (skip string, err error) {
	if c.Sampler == "dist_rng" {
		return "expects token ids from llama_sampler_init_dist_rng (LLAMA_RNG_TYPE_LOWBIAS32" +
			", blue noise), a generator whose code is not in the data; tether's dist uses std::mt19937", nil
	}
	if len(c.InputProbs) == 0 {
		return "", fmt.Errorf("no input_probs")
	}
	s, err := BuildSampler(c)
	if err != nil {
		return "", fmt.Errorf("building sampler: %w", err)
	}
	for _, t := range c.History {
		s.Accept(t)
	}
	cands := make([]sampling.Candidate, len(c.InputProbs))
	for i, p := range c.InputProbs {
		cands[i] = sampling.Candidate{ID: int32(i), Logit: logf32(p), P: float32(p)}
	}
	arr := sampling.NewCandidates(len(cands))
	if err := arr.SetCandidates(cands); err != nil {
		return "", err
	}
	if err := s.Apply(arr); err != nil {
		return "", fmt.Errorf("apply: %w", err)
	}
	if c.PostSampler != nil && *c.PostSampler != "" {
		if *c.PostSampler != "dist(seed=0)" {
			return "", fmt.Errorf("unknown post_sampler %q", *c.PostSampler)
		}
		if err := sampling.NewDist(0).Apply(arr); err != nil {
			return "", fmt.Errorf("dist: %w", err)
		}
	}
	return "", compare(arr.Data, c.ExpectedProbs, c.Derived.OutputTokenIDs)
}

func compare(got []sampling.Candidate, want []float64, ids []int) error {
	if len(got) != len(want) {
		return fmt.Errorf("size %d, want %d (got %s)", len(got), len(want), describe(got))
	}
	if len(ids) != len(want) {
		return fmt.Errorf("data: derived.output_token_ids has %d ids for %d probabilities", len(ids), len(want))
	}
	wantByID := map[int]float64{}
	for i, id := range ids {
		wantByID[id] = want[i]
	}
	for _, t := range got {
		w, ok := wantByID[int(t.ID)]
		if !ok {
			return fmt.Errorf("token %d survived but is not expected (got %s)", t.ID, describe(got))
		}
		if !(math.Abs(float64(t.P)-float64(float32(w))) < Tolerance) {
			return fmt.Errorf("token %d: p = %.7g, want %.7g (got %s)", t.ID, t.P, w, describe(got))
		}
	}
	return nil
}

func describe(d []sampling.Candidate) string {
	s := "["
	for i, t := range d {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%d:%.6g", t.ID, t.P)
	}
	return s + "]"
}

// RunQueueCase runs one test_sampler_queue case: token i has logit logf(i), and each
// letter (k, p, m) is followed by dist(0); after each step the size and, where the test
// asserts them, the first and last ids are checked.
func RunQueueCase(q QueueCase) error {
	n := q.Params.NVocab
	logits := make([]float32, n)
	for i := range logits {
		logits[i] = float32(math.Log(float64(float32(i))))
	}
	arr := sampling.NewCandidates(n)
	if err := arr.SetLogits(logits); err != nil {
		return err
	}
	if len(q.Samplers) != len(q.Expected.Steps) {
		return fmt.Errorf("data: %d samplers but %d steps", len(q.Samplers), len(q.Expected.Steps))
	}
	for i := 0; i < len(q.Samplers); i++ {
		var s sampling.Sampler
		var err error
		switch q.Samplers[i] {
		case 'k':
			s, err = sampling.NewTopK(q.Params.TopK)
		case 'p':
			s, err = sampling.NewTopP(float32(q.Params.TopP), 1)
		case 'm':
			s, err = sampling.NewMinP(float32(q.Params.MinP), 1)
		default:
			return fmt.Errorf("unknown queue sampler %q", q.Samplers[i])
		}
		if err != nil {
			return err
		}
		if err := s.Apply(arr); err != nil {
			return err
		}
		if err := sampling.NewDist(0).Apply(arr); err != nil {
			return err
		}
		st := q.Expected.Steps[i]
		if len(arr.Data) != st.ExpectedSize {
			return fmt.Errorf("step %d (%c): size %d, want %d", i, q.Samplers[i], len(arr.Data), st.ExpectedSize)
		}
		if st.IDsAsserted {
			first, last := int(arr.Data[0].ID), int(arr.Data[len(arr.Data)-1].ID)
			if first != st.ExpectedFirstID || last != st.ExpectedLastID {
				return fmt.Errorf("step %d (%c): first/last id %d/%d, want %d/%d", i, q.Samplers[i],
					first, last, st.ExpectedFirstID, st.ExpectedLastID)
			}
		}
	}
	return nil
}
