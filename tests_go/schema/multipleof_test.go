package schema_test

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/schema"
)

// moRange is a set of numbers n/10^fracDigits, lo <= n <= hi, each written in
// the grammar's textual form (see moTexts).
type moRange struct {
	lo, hi     int64
	fracDigits int
}

// moTexts writes n/10^fd in the spellings the multipleOf grammar writes: the
// shortest (no trailing zeros in the fraction, none at all for an integer) and
// the fraction padded with zeros to fd digits; an integer also as "n.0" unless
// integer is set (an integer type has no fraction).
func moTexts(n int64, fd int, integer bool) []string {
	neg := n < 0
	if neg {
		n = -n
	}
	pow := int64(1)
	for range fd {
		pow *= 10
	}
	ip, fp := n/pow, n%pow
	sign := ""
	if neg {
		sign = "-"
	}
	frac := fmt.Sprintf("%0*d", fd, fp)
	short := strings.TrimRight(frac, "0")
	var out []string
	if short == "" {
		out = append(out, sign+fmt.Sprint(ip))
		if integer {
			return out
		}
		out = append(out, sign+fmt.Sprint(ip)+".0")
	} else {
		out = append(out, sign+fmt.Sprint(ip)+"."+short)
	}
	if fd > 0 && len(short) < fd {
		out = append(out, sign+fmt.Sprint(ip)+"."+frac)
	}
	return out
}

// moValid judges a number text against multipleOf and bounds (nil: none) with
// exact rational arithmetic.
type moBounds struct {
	min, max, exMin, exMax string
}

func moValid(t *testing.T, text string, multiple string, integer bool, b moBounds) bool {
	x, ok := new(big.Rat).SetString(text)
	require.True(t, ok, text)
	m, ok := new(big.Rat).SetString(multiple)
	require.True(t, ok, multiple)
	if integer && !x.IsInt() {
		return false
	}
	if !new(big.Rat).Quo(x, m).IsInt() {
		return false
	}
	cmp := func(bound string) int {
		r, ok := new(big.Rat).SetString(bound)
		require.True(t, ok, bound)
		return x.Cmp(r)
	}
	if b.min != "" && cmp(b.min) < 0 || b.exMin != "" && cmp(b.exMin) <= 0 ||
		b.max != "" && cmp(b.max) > 0 || b.exMax != "" && cmp(b.exMax) >= 0 {
		return false
	}
	return true
}

func (b moBounds) json() string {
	var parts []string
	for _, kv := range [][2]string{{"minimum", b.min}, {"maximum", b.max}, {"exclusiveMinimum", b.exMin}, {"exclusiveMaximum", b.exMax}} {
		if kv[1] != "" {
			parts = append(parts, fmt.Sprintf(`,%q:%s`, kv[0], kv[1]))
		}
	}
	return strings.Join(parts, "")
}

// moOdd are spellings outside the grammar's textual form: whatever the grammar
// makes of them, it must not accept one the schema rejects.
var moOdd = []string{"-0", "-0.0", "-0.00", "00", "01", "-01", "0.", "1.", ".5", "+1", "1e1", "1E2", "2e0", "-1e1",
	"1e-1", "5e-1", "0.50000000", "3.00000", "1.5e1", "12E-1", "0.0", "00.5", "-", ".", "1..0", "1.-0", "--1"}

// TestMultipleOfExact: for integer and decimal multipleOf values, with and
// without bounds, every number of a range in the grammar's textual form
// is accepted iff it is a multiple within the bounds (judged with math/big),
// and odd spellings (exponents, -0, leading zeros) are never accepted when
// invalid.
func TestMultipleOfExact(t *testing.T) {
	ints := moRange{-2000, 2000, 0}
	decs := moRange{-30000, 30000, 4} // -3 to 3, four fraction digits
	cases := []struct {
		name, typ, multiple string
		bounds              moBounds
		ranges              []moRange
	}{
		{"integer k=2", "integer", "2", moBounds{}, []moRange{ints}},
		{"integer k=3", "integer", "3", moBounds{}, []moRange{ints}},
		{"integer k=7", "integer", "7", moBounds{}, []moRange{ints}},
		{"integer k=10", "integer", "10", moBounds{}, []moRange{ints}},
		{"integer k=12", "integer", "12", moBounds{}, []moRange{ints}},
		{"integer k=999", "integer", "999", moBounds{}, []moRange{ints, {-1000000, -990000, 0}, {997000, 1000000, 0}}},
		{"integer k=1.5 (multiples of 3)", "integer", "1.5", moBounds{}, []moRange{ints}},
		{"integer k=0.3 (multiples of 3)", "integer", "0.3", moBounds{}, []moRange{ints}},
		{"integer k=0.02", "integer", "0.02", moBounds{}, []moRange{ints}},
		{"integer k=2.5 (multiples of 5)", "integer", "2.5", moBounds{}, []moRange{ints}},
		{"integer k=1e2", "integer", "1e2", moBounds{}, []moRange{ints}},
		{"number k=3", "number", "3", moBounds{}, []moRange{ints, {-300, 300, 2}}},
		{"number k=12", "number", "12", moBounds{}, []moRange{ints, {-300, 300, 2}}},
		{"number k=0.5", "number", "0.5", moBounds{}, []moRange{ints, decs}},
		{"number k=0.02", "number", "0.02", moBounds{}, []moRange{ints, decs}},
		{"number k=0.0001", "number", "0.0001", moBounds{}, []moRange{ints, decs}},
		{"number k=1.5", "number", "1.5", moBounds{}, []moRange{ints, decs}},
		{"number k=0.3", "number", "0.3", moBounds{}, []moRange{ints, decs}},
		{"number k=0.75", "number", "0.75", moBounds{}, []moRange{ints, decs}},
		{"number k=0.0007", "number", "0.0007", moBounds{}, []moRange{ints, decs}},
		{"number k=7.5e-3", "number", "7.5e-3", moBounds{}, []moRange{ints, decs}},

		{"integer k=7 in [-50, 100)", "integer", "7", moBounds{min: "-50", exMax: "100"}, []moRange{ints}},
		{"integer k=12 >= 0", "integer", "12", moBounds{min: "0"}, []moRange{ints}},
		{"integer k=12 > 0", "integer", "12", moBounds{exMin: "0"}, []moRange{ints}},
		{"integer k=3 <= 0", "integer", "3", moBounds{max: "0"}, []moRange{ints}},
		{"integer k=999 in [-1998.5, 1998]", "integer", "999", moBounds{min: "-1998.5", max: "1998"}, []moRange{ints}},
		{"integer k=7 in (-70.5, 13.9]", "integer", "7", moBounds{exMin: "-70.5", max: "13.9"}, []moRange{ints}},
		{"integer k=10 >= 995", "integer", "10", moBounds{min: "995"}, []moRange{ints, {99990, 100010, 0}}},
		{"integer k=3 <= -1001", "integer", "3", moBounds{max: "-1001"}, []moRange{ints}},
		{"integer k=5 in [1234, 1236]", "integer", "5", moBounds{min: "1234", max: "1236"}, []moRange{ints}},
		{"number k=0.25 in [-1.3, 2.6]", "number", "0.25", moBounds{min: "-1.3", max: "2.6"}, []moRange{decs}},
		{"number k=0.3 in (0, 3]", "number", "0.3", moBounds{exMin: "0", max: "3"}, []moRange{ints, decs}},
		{"number k=0.01 in [0.5, 1.5]", "number", "0.01", moBounds{min: "0.5", max: "1.5"}, []moRange{ints, decs}},
		{"number k=0.0001 in (-0.0003, 0.00025)", "number", "0.0001", moBounds{exMin: "-0.0003", exMax: "0.00025"}, []moRange{decs}},
		{"number k=1.5 < -3", "number", "1.5", moBounds{exMax: "-3"}, []moRange{ints, decs}},
		{"number k=0.5 in [0, 10)", "number", "0.5", moBounds{min: "0", exMax: "10"}, []moRange{ints, decs}},
		{"number k=2 in [-2.5, 2.5]", "number", "2", moBounds{min: "-2.5", max: "2.5"}, []moRange{ints, decs}},
		{"number k=0.02 >= 1.23", "number", "0.02", moBounds{min: "1.23"}, []moRange{ints, decs}},
		{"number k=0.3 in [-1000, 1000]", "number", "0.3", moBounds{min: "-1000", max: "1000"}, []moRange{ints, {-10000000, -9990000, 4}, {9990000, 10000000, 4}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			integer := tc.typ == "integer"
			src := fmt.Sprintf(`{"type":%q,"multipleOf":%s%s}`, tc.typ, tc.multiple, tc.bounds.json())
			g, ign, err := schema.FromJSONSchema([]byte(src))
			require.NoError(t, err, src)
			require.Empty(t, ign)
			c := newChecker(t, g)
			checked := 0
			for _, r := range tc.ranges {
				for n := r.lo; n <= r.hi; n++ {
					for _, text := range moTexts(n, r.fracDigits, integer) {
						want := moValid(t, text, tc.multiple, integer, tc.bounds)
						if got := c.accepts(text); got != want {
							require.Equal(t, want, got, "%s: %q\n%s", src, text, g)
						}
						checked++
					}
				}
			}
			for _, text := range moOdd {
				if !c.accepts(text) {
					continue
				}
				_, isNum := new(big.Rat).SetString(text)
				require.True(t, isNum && !strings.HasPrefix(text, "+") && !strings.HasPrefix(text, ".") &&
					!strings.HasSuffix(text, ".") && !strings.HasPrefix(text, "00") && !strings.HasPrefix(text, "01") &&
					!strings.HasPrefix(text, "-01"), "%s: not JSON: %q", src, text)
				assert.True(t, moValid(t, text, tc.multiple, integer, tc.bounds), "%s: invalid %q accepted", src, text)
			}
			assert.Positive(t, checked)
		})
	}
}

// TestMultipleOfMerged: allOf (and $ref with siblings) of two multipleOf
// values is the multipleOf of their least common multiple, rationals
// included.
func TestMultipleOfMerged(t *testing.T) {
	cases := []struct {
		name, schema, typ string
		multiples         []string // each valid instance is a multiple of all
	}{
		{"4 and 6", `{"type":"integer","allOf":[{"multipleOf":4},{"multipleOf":6}]}`, "integer", []string{"4", "6"}},
		{"sibling and allOf", `{"type":"integer","multipleOf":10,"allOf":[{"multipleOf":4}]}`, "integer", []string{"10", "4"}},
		{"0.5 and 0.3", `{"type":"number","allOf":[{"multipleOf":0.5},{"multipleOf":0.3}]}`, "number", []string{"0.5", "0.3"}},
		{"0.02 and 0.0003", `{"type":"number","allOf":[{"multipleOf":0.02},{"multipleOf":0.0003}]}`, "number", []string{"0.02", "0.0003"}},
		{"1.5 and 2, bounded", `{"type":"number","minimum":-7,"allOf":[{"multipleOf":1.5},{"multipleOf":2,"maximum":13}]}`, "number", []string{"1.5", "2"}},
		{"three values", `{"allOf":[{"multipleOf":2},{"multipleOf":3},{"multipleOf":0.5}]}`, "number", []string{"2", "3", "0.5"}},
		{"$ref with sibling", `{"$defs":{"a":{"multipleOf":7}},"$ref":"#/$defs/a","multipleOf":3,"type":"integer"}`, "integer", []string{"7", "3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, ign, err := schema.FromJSONSchema([]byte(tc.schema))
			require.NoError(t, err, tc.schema)
			require.Empty(t, ign)
			c := newChecker(t, g)
			var lo, hi *big.Rat
			if strings.Contains(tc.schema, "minimum") {
				lo, hi = big.NewRat(-7, 1), big.NewRat(13, 1)
			}
			for n := int64(-3000); n <= 3000; n++ {
				for _, text := range moTexts(n, 2, tc.typ == "integer") {
					x, _ := new(big.Rat).SetString(text)
					want := tc.typ != "integer" || x.IsInt()
					for _, m := range tc.multiples {
						mr, _ := new(big.Rat).SetString(m)
						want = want && new(big.Rat).Quo(x, mr).IsInt()
					}
					if lo != nil {
						want = want && x.Cmp(lo) >= 0 && x.Cmp(hi) <= 0
					}
					if got := c.accepts(text); got != want {
						require.Equal(t, want, got, "%s: %q\n%s", tc.schema, text, g)
					}
				}
			}
		})
	}
}

// TestMultipleOfRefused: a multipleOf whose remainder automaton would be too
// large is a *SchemaError naming multipleOf (Lenient ignores it and lists
// it); one that no number in the bounds satisfies is unsatisfiable.
func TestMultipleOfRefused(t *testing.T) {
	for _, src := range []string{
		`{"type":"integer","multipleOf":0.123456789}`,
		`{"type":"integer","multipleOf":1000003}`,
		`{"type":"number","multipleOf":4999.7}`,
		`{"type":"integer","multipleOf":997,"minimum":-1e30,"maximum":1e30}`,
		`{"type":"integer","multipleOf":1021,"format":"int32"}`,
		`{"type":"integer","multipleOf":40009,"minimum":0,"maximum":1e9}`,
		`{"type":"integer","multipleOf":1e300}`,
	} {
		t.Run(src, func(t *testing.T) {
			_, _, err := schema.FromJSONSchema([]byte(src))
			var se *schema.SchemaError
			require.True(t, errors.As(err, &se), "want a *SchemaError, got %v", err)
			assert.Equal(t, "multipleOf", se.Keyword, se.Error())
			assert.Contains(t, se.Error(), "1024")
			g, ign, err := schema.FromJSONSchema([]byte(src), schema.Lenient())
			require.NoError(t, err)
			require.NotEmpty(t, ign)
			assert.Equal(t, "multipleOf", ign[0].Keyword)
			newChecker(t, g)
		})
	}
	for _, src := range []string{
		`{"type":"integer","multipleOf":7,"minimum":1,"maximum":6}`,
		`{"type":"number","multipleOf":0.3,"exclusiveMinimum":0.3,"exclusiveMaximum":0.6}`,
	} {
		t.Run(src, func(t *testing.T) {
			_, _, err := schema.FromJSONSchema([]byte(src))
			var se *schema.SchemaError
			require.True(t, errors.As(err, &se), "want a *SchemaError, got %v", err)
			// inside anyOf the branch is dropped
			g, _, err := schema.FromJSONSchema([]byte(`{"anyOf":[` + src + `,{"type":"null"}]}`))
			require.NoError(t, err)
			c := newChecker(t, g)
			assert.True(t, c.accepts("null"))
			assert.False(t, c.accepts("7"))
		})
	}
}

// TestMultipleOfLlamaDigits: with LlamaCppCompat integers keep their digit
// cap under multipleOf.
func TestMultipleOfLlamaDigits(t *testing.T) {
	g, _, err := schema.FromJSONSchema([]byte(`{"type":"integer","multipleOf":7}`), schema.LlamaCppCompat())
	require.NoError(t, err)
	c := newChecker(t, g)
	assert.True(t, c.accepts("7000000000000007"))   // 16 digits, a multiple
	assert.False(t, c.accepts("70000000000000007")) // 17 digits
	assert.False(t, c.accepts("7000000000000008"))
	assert.True(t, c.accepts("-9999999999999996"))
}

// TestMultipleOfRandom: random multipleOf values p/10^d with random bounds
// (inclusive, exclusive or absent, integer or not), judged exactly over every
// number n/1000 in [-2.5, 2.5] and every integer in [-300, 300].
func TestMultipleOfRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	dec := func(n int64, fd int) string { return moTexts(n, fd, false)[0] }
	for i := range 150 {
		d := rng.IntN(4)
		p := 1 + rng.Int64N(40)
		if i%5 == 0 {
			p = 1 + rng.Int64N(1000)
		}
		multiple := dec(p, d)
		typ := "number"
		if rng.IntN(3) == 0 {
			typ = "integer"
		}
		var b moBounds
		bound := func() string { // in [-2.5, 2.5], up to 3 fraction digits
			fd := rng.IntN(4)
			s := int64(25)
			for range fd {
				s *= 10
			}
			return dec((rng.Int64N(2*s+1)-s)/10, fd)
		}
		switch rng.IntN(3) {
		case 0:
			b.min = bound()
		case 1:
			b.exMin = bound()
		}
		switch rng.IntN(3) {
		case 0:
			b.max = bound()
		case 1:
			b.exMax = bound()
		}
		// mostly non-empty ranges: the lower bound below the upper one
		lower, upper := &b.min, &b.max
		if b.exMin != "" {
			lower = &b.exMin
		}
		if b.exMax != "" {
			upper = &b.exMax
		}
		if *lower != "" && *upper != "" && i%8 != 0 {
			l, _ := new(big.Rat).SetString(*lower)
			u, _ := new(big.Rat).SetString(*upper)
			if l.Cmp(u) > 0 {
				*lower, *upper = *upper, *lower
			}
		}
		src := fmt.Sprintf(`{"type":%q,"multipleOf":%s%s}`, typ, multiple, b.json())
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			integer := typ == "integer"
			g, _, err := schema.FromJSONSchema([]byte(src))
			if err != nil {
				var se *schema.SchemaError
				require.True(t, errors.As(err, &se), "%s: %v", src, err)
				t.Logf("%s: %v", src, err)
				// only an empty range may fail
				for _, r := range []moRange{{-300, 300, 0}, {-2500, 2500, 3}} {
					for n := r.lo; n <= r.hi; n++ {
						text := moTexts(n, r.fracDigits, integer)[0]
						require.False(t, moValid(t, text, multiple, integer, b), "%s refused (%v) but %s is valid", src, err, text)
					}
				}
				return
			}
			c := newChecker(t, g)
			for _, r := range []moRange{{-300, 300, 0}, {-2500, 2500, 3}} {
				for n := r.lo; n <= r.hi; n++ {
					for _, text := range moTexts(n, r.fracDigits, integer) {
						want := moValid(t, text, multiple, integer, b)
						if got := c.accepts(text); got != want {
							require.Equal(t, want, got, "%s: %q\n%s", src, text, g)
						}
					}
				}
			}
		})
	}
}

// TestMultipleOfFewMultiples: a multipleOf too large for the remainder
// automaton is still exact when the bounds hold few multiples (a trie of
// their texts): every multiple is accepted in each of its spellings, and the
// numbers around them and around the bounds are judged exactly.
func TestMultipleOfFewMultiples(t *testing.T) {
	cases := []struct {
		typ, multiple string
		fd            int   // fraction digits of the texts checked
		step          int64 // the multiple times 10^fd
		bounds        moBounds
		lo, hi        int64 // the bounds times 10^fd (a range to check)
	}{
		{"integer", "123457", 0, 123457, moBounds{min: "-300000", max: "500000"}, -300000, 500000},
		{"integer", "40000", 0, 40000, moBounds{exMin: "0", exMax: "1e6"}, 0, 1000000},
		{"number", "86400", 1, 864000, moBounds{min: "-100000", max: "200000"}, -1000000, 2000000},
		{"number", "1234.56", 2, 123456, moBounds{min: "-5000", max: "5000"}, -500000, 500000},
		{"number", "0.0123457", 7, 123457, moBounds{exMin: "-0.05", max: "0.05"}, -500000, 500000},
		{"number", "3.7e4", 0, 37000, moBounds{min: "-1e5", exMax: "74000"}, -100000, 74000},
	}
	for _, tc := range cases {
		src := fmt.Sprintf(`{"type":%q,"multipleOf":%s%s}`, tc.typ, tc.multiple, tc.bounds.json())
		t.Run(src, func(t *testing.T) {
			integer := tc.typ == "integer"
			g, ign, err := schema.FromJSONSchema([]byte(src))
			require.NoError(t, err, src)
			require.Empty(t, ign)
			c := newChecker(t, g)
			check := func(n int64) {
				for _, text := range moTexts(n, tc.fd, integer) {
					want := moValid(t, text, tc.multiple, integer, tc.bounds)
					if got := c.accepts(text); got != want {
						require.Equal(t, want, got, "%s: %q\n%s", src, text, g)
					}
				}
			}
			multiples := 0
			for n := tc.lo - tc.lo%tc.step; n <= tc.hi; n += tc.step {
				for _, k := range []int64{-1, 0, 1} {
					check(n + k)
				}
				multiples++
			}
			for _, base := range []int64{tc.lo, 0, tc.hi} {
				for n := base - 3000; n <= base+3000; n++ {
					check(n)
				}
			}
			assert.Greater(t, multiples, 3)
		})
	}
}
