// Package schemabench measures the JSON Schema converter on a JSONSchemaBench
// style corpus (one {name, schema, tests} object per line): how many schemas
// convert, whether every instance is judged right, how long conversion takes
// and, given a tokenized vocabulary, how long token masks take along valid
// instances. It belongs to the schema front end's tooling: it drives
// gocore/schema and gocore/engine and knows nothing of tokenizer file formats
// (the caller passes an encode function).
package schemabench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tetherlm/tether/gocore/tokenmask"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/schema"
)

// Case is one line of the corpus.
type Case struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Tests  []struct {
		Description string          `json:"description"`
		Valid       bool            `json:"valid"`
		Data        json.RawMessage `json:"data"`
	} `json:"tests"`
}

// Percentiles are the median and 99th percentile of a set of timings.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// Summary is what Run reports.
type Summary struct {
	Schemas         int            `json:"schemas"`
	Compiled        int            `json:"compiled"`
	Passing         int            `json:"passing"`
	PassingPercent  float64        `json:"passing_percent"`
	Instances       int            `json:"instances"`
	ValidRejected   int            `json:"valid_rejected"`
	InvalidAccepted int            `json:"invalid_accepted"`
	CompileErrors   map[string]int `json:"compile_errors"`
	ConversionMS    Percentiles    `json:"conversion_ms"`
	// CompileMS is schema text -> compiled grammar (conversion, parse, engine
	// compile with a byte vocabulary) for the schemas that compiled.
	CompileMS CompileStats `json:"compile_ms"`
	// VocabCompileMS is schema text -> first mask with Vocab (when given).
	VocabCompileMS *CompileStats `json:"vocab_compile_ms,omitempty"`
	// SlowCompiles names the schemas whose CompileMS exceeded 100 ms.
	SlowCompiles []string     `json:"slow_compiles,omitempty"`
	MaskUS       *Percentiles `json:"mask_us,omitempty"`
	MaskCount    int          `json:"masks,omitempty"`
	// InvalidAcceptedCases names the schemas that accepted an invalid instance.
	InvalidAcceptedCases []string `json:"invalid_accepted_cases,omitempty"`
	// ValidRejectedCases names the schemas that rejected a valid instance.
	ValidRejectedCases []string `json:"valid_rejected_cases,omitempty"`
}

// CompileStats summarizes compile times in milliseconds.
type CompileStats struct {
	P50       float64 `json:"p50"`
	P99       float64 `json:"p99"`
	Max       float64 `json:"max"`
	Over100ms int     `json:"over_100ms"`
}

func compileStats(xs []float64) CompileStats {
	p := percentiles(xs)
	st := CompileStats{P50: p.P50, P99: p.P99}
	for _, x := range xs {
		st.Max = max(st.Max, float64(int(x*1000))/1000)
		if x > 100 {
			st.Over100ms++
		}
	}
	return st
}

// Options configure Run.
type Options struct {
	Schema []schema.Option // converter options
	// With Vocab and Encode set, masks are timed along every valid instance's
	// tokens (compact serialization).
	Vocab  engine.Vocabulary
	Encode func(text string) ([]int, error)
	// Limit stops after this many schemas (0: all).
	Limit int
	// Workers judge cases in parallel (0: GOMAXPROCS; always 1 with Vocab).
	Workers int
}

// caseResult is what judging one case found.
type caseResult struct {
	convMS, compileMS, vocabMS float64
	errKey                     string // "" if it compiled
	instances                  int
	validRejected              int
	invalidAccepted            int
	masks                      []float64
}

// Run reads the corpus from r and judges every case. Cases are judged on
// Workers goroutines (default GOMAXPROCS; one when masks are timed, so that
// the timings are not shared with other work); the summary is the same in any
// case, in corpus order.
func Run(r io.Reader, opts Options) (*Summary, error) {
	s := &Summary{CompileErrors: map[string]int{}}
	var cases []Case
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var c Case
		if err := json.Unmarshal(line, &c); err != nil {
			return nil, fmt.Errorf("schemabench: case %d: %v", len(cases)+1, err)
		}
		cases = append(cases, c)
		if opts.Limit > 0 && len(cases) >= opts.Limit {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if opts.Vocab != nil && opts.Encode != nil {
		workers = 1
	}
	results := make([]caseResult, len(cases))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, max(len(cases), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = judge(cases[i], opts)
			}
		}()
	}
	for i := range cases {
		next <- i
	}
	close(next)
	wg.Wait()

	var conv, compiles, vcompiles, masks []float64
	for i, res := range results {
		c := cases[i]
		s.Schemas++
		conv = append(conv, res.convMS)
		if res.errKey != "" {
			s.CompileErrors[res.errKey]++
			continue
		}
		compiles = append(compiles, res.compileMS)
		if res.compileMS > 100 {
			s.SlowCompiles = append(s.SlowCompiles, c.Name)
		}
		s.Compiled++
		s.Instances += res.instances
		s.ValidRejected += res.validRejected
		s.InvalidAccepted += res.invalidAccepted
		for range res.validRejected {
			s.ValidRejectedCases = append(s.ValidRejectedCases, c.Name)
		}
		for range res.invalidAccepted {
			s.InvalidAcceptedCases = append(s.InvalidAcceptedCases, c.Name)
		}
		if res.validRejected == 0 && res.invalidAccepted == 0 {
			s.Passing++
		}
		if res.vocabMS > 0 {
			vcompiles = append(vcompiles, res.vocabMS)
		}
		masks = append(masks, res.masks...)
	}
	if s.Schemas > 0 {
		s.PassingPercent = float64(int(1000*float64(s.Passing)/float64(s.Schemas))) / 10
	}
	s.ConversionMS = percentiles(conv)
	s.CompileMS = compileStats(compiles)
	if vcompiles != nil {
		st := compileStats(vcompiles)
		s.VocabCompileMS = &st
	}
	if masks != nil {
		p := percentiles(masks)
		s.MaskUS = &p
		s.MaskCount = len(masks)
	}
	return s, nil
}

// judge converts, compiles and judges one case.
func judge(c Case, opts Options) caseResult {
	var res caseResult
	start := time.Now()
	g, _, err := schema.FromJSONSchema(c.Schema, opts.Schema...)
	res.convMS = float64(time.Since(start).Microseconds()) / 1000
	var gr *engine.Grammar
	if err == nil {
		var pg *gbnf.Grammar
		if pg, err = gbnf.Parse(g); err == nil {
			gr, err = engine.Compile(pg, engine.ByteVocabulary{})
		}
	}
	if err != nil {
		res.errKey = errorKey(err)
		return res
	}
	res.compileMS = float64(time.Since(start).Microseconds()) / 1000
	m := gr.NewMatcher()
	for _, t := range c.Tests {
		for _, text := range Serializations(t.Data) {
			res.instances++
			m.Reset()
			ok := m.AcceptBytes([]byte(text)) == nil && m.CanEnd()
			if ok != t.Valid {
				if t.Valid {
					res.validRejected++
				} else {
					res.invalidAccepted++
				}
			}
		}
	}
	if opts.Vocab != nil && opts.Encode != nil {
		vstart := time.Now()
		pg, _ := gbnf.Parse(g)
		tgr, err := engine.Compile(pg, opts.Vocab)
		if err == nil {
			tgr.NewMatcher().FillMask(tokenmask.New(opts.Vocab.Size()))
			res.vocabMS = float64(time.Since(vstart).Microseconds())/1000 + res.convMS
			res.masks = timeMasks(tgr, c, opts)
		}
	}
	return res
}

// timeMasks fills a mask before each token of each valid instance and returns
// the times in microseconds.
func timeMasks(gr *engine.Grammar, c Case, opts Options) []float64 {
	var out []float64
	words := tokenmask.New(opts.Vocab.Size())
	for _, t := range c.Tests {
		if !t.Valid {
			continue
		}
		text := Serializations(t.Data)[0]
		ids, err := opts.Encode(text)
		if err != nil {
			continue
		}
		m := gr.NewMatcher()
		for _, id := range ids {
			start := time.Now()
			if m.FillMask(words) != nil {
				break
			}
			out = append(out, float64(time.Since(start).Nanoseconds())/1000)
			if m.AcceptToken(id) != nil {
				break
			}
		}
		start := time.Now()
		if m.FillMask(words) == nil {
			out = append(out, float64(time.Since(start).Nanoseconds())/1000)
		}
	}
	return out
}

// errorKey groups conversion errors: the keyword of a SchemaError, else the kind.
func errorKey(err error) string {
	var se *schema.SchemaError
	if errors.As(err, &se) {
		if se.Keyword != "" {
			return se.Keyword
		}
		return "schema"
	}
	var ge *gbnf.Error
	if errors.As(err, &ge) {
		return "gbnf"
	}
	return "engine"
}

func percentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	at := func(q float64) float64 {
		i := int(q * float64(len(s)-1))
		return float64(int(s[i]*1000)) / 1000
	}
	return Percentiles{P50: at(0.5), P99: at(0.99)}
}

// Serializations writes a JSON value twice, keys in their order: compactly, and
// with ", " and ": " separators. Strings get the fewest escapes.
func Serializations(data json.RawMessage) []string {
	compact, err1 := reserialize(data, ",", ":")
	spaced, err2 := reserialize(data, ", ", ": ")
	if err1 != nil || err2 != nil {
		return []string{string(data)}
	}
	if compact == spaced {
		return []string{compact}
	}
	return []string{compact, spaced}
}

func reserialize(data []byte, comma, colon string) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var b strings.Builder
	type frame struct {
		obj   bool
		count int
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			closing := tok == json.Delim('}') || tok == json.Delim(']')
			if !closing {
				if top.obj {
					if top.count%2 == 0 && top.count > 0 {
						b.WriteString(comma)
					} else if top.count%2 == 1 {
						b.WriteString(colon)
					}
				} else if top.count > 0 {
					b.WriteString(comma)
				}
				top.count++
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, frame{obj: t == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			b.WriteString(t.String())
		case string:
			b.WriteString(quote(t))
		case json.Number:
			b.WriteString(string(t))
		case bool:
			fmt.Fprint(&b, t)
		case nil:
			b.WriteString("null")
		}
	}
	return b.String(), nil
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else if r == utf8.RuneError {
				b.WriteRune(r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
