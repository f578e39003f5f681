package schema_test

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/schema"
)

// bdBound is one numeric keyword of a schema.
type bdBound struct{ key, value string }

// bdSchema writes a schema of type typ with the bounds.
func bdSchema(typ string, bounds []bdBound, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":%q`, typ)
	for _, x := range bounds {
		fmt.Fprintf(&b, `,%q:%s`, x.key, x.value)
	}
	b.WriteString(extra)
	b.WriteString("}")
	return b.String()
}

// bdMeets judges x against the bounds with exact rational arithmetic.
func bdMeets(t *testing.T, bounds []bdBound) func(x *big.Rat) bool {
	rs := make([]*big.Rat, len(bounds))
	for i, b := range bounds {
		r, ok := new(big.Rat).SetString(b.value)
		require.True(t, ok, b.value)
		rs[i] = r
	}
	return func(x *big.Rat) bool {
		for i, b := range bounds {
			c := x.Cmp(rs[i])
			switch b.key {
			case "minimum":
				if c < 0 {
					return false
				}
			case "exclusiveMinimum":
				if c <= 0 {
					return false
				}
			case "maximum":
				if c > 0 {
					return false
				}
			case "exclusiveMaximum":
				if c >= 0 {
					return false
				}
			default:
				t.Fatalf("unknown bound %s", b.key)
			}
		}
		return true
	}
}

// bdJSONNumber is JSON's number syntax; bdPlain is the form bounded numbers
// are written in (no exponent; "-0" and "-0.0" excepted separately).
var (
	bdJSONNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)
	bdPlain      = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?$`)
)

// bdText is a text with what the checks need to know of it.
type bdText struct {
	s     string
	json  bool     // a JSON number
	plain bool     // in the form bounded numbers are written in
	x     *big.Rat // its value, when json
}

// bdTexts are the decimal texts checked: integer parts around the bounds
// used below, every fraction of up to three digits, four-digit fractions of
// the digits 0, 1, 5 and 9, a few longer ones, both signs; and odd spellings
// (leading zeros, "1.", ".5", "-0", exponents, garbage).
func bdTexts(t *testing.T) []bdText {
	ints := []string{"0", "1", "2", "3", "9", "10", "99", "100", "101", "1000", "12345"}
	fracs := []string{""}
	for n := 1; n <= 3; n++ {
		lim := 1
		for range n {
			lim *= 10
		}
		for f := range lim {
			fracs = append(fracs, fmt.Sprintf(".%0*d", n, f))
		}
	}
	digs := "0159"
	for a := range digs {
		for b := range digs {
			for c := range digs {
				for d := range digs {
					fracs = append(fracs, "."+string([]byte{digs[a], digs[b], digs[c], digs[d]}))
				}
			}
		}
	}
	fracs = append(fracs, ".00001", ".000000001", ".12500001", ".12499999", ".05000", ".050001", ".049999999",
		".0010000", ".00100001", ".2500000000000000001", ".24999", ".4999", ".5001")
	var texts []string
	for _, i := range ints {
		for _, f := range fracs {
			texts = append(texts, i+f, "-"+i+f)
		}
	}
	texts = append(texts, "-0", "-0.0", "-0.000", "-0.00", "00", "01", "-01", "001.1", "00.5", "0.", "1.", "-1.", ".5",
		"-.5", "+1", "+1.1", "1e1", "1E2", "2e0", "-1e1", "1e-1", "5e-1", "1.1e0", "11e-1", "1.5e1", "12E-1",
		"-3.125e0", "1e400", "-", ".", "", "1..0", "1.-0", "--1", "1 ", " 1", "1.1.1", "0x1", "NaN", "Infinity")
	out := make([]bdText, len(texts))
	for i, s := range texts {
		out[i] = bdText{s: s, json: bdJSONNumber.MatchString(s)}
		if out[i].json {
			x, ok := new(big.Rat).SetString(s)
			require.True(t, ok, s)
			out[i].x = x
			negZero := strings.HasPrefix(s, "-") && x.Sign() == 0
			out[i].plain = bdPlain.MatchString(s) && !negZero
		}
	}
	return out
}

// bdCheck judges every text: a plain text (without a fraction when noFrac is
// set) is accepted iff it meets the bounds; any other accepted text must be
// a JSON number that meets them (soundness).
func bdCheck(t *testing.T, src, g string, texts []bdText, noFrac bool, meets func(*big.Rat) bool) {
	t.Helper()
	c := newChecker(t, g)
	for _, tx := range texts {
		got := c.accepts(tx.s)
		if !tx.json {
			if got {
				require.Fail(t, "not a JSON number, accepted", "%s: %q\n%s", src, tx.s, g)
			}
			continue
		}
		want := meets(tx.x)
		if tx.plain && !(noFrac && strings.Contains(tx.s, ".")) {
			if got != want {
				require.Equal(t, want, got, "%s: %q\n%s", src, tx.s, g)
			}
		} else if got && !want {
			require.Fail(t, "accepted outside the bounds", "%s: %q\n%s", src, tx.s, g)
		}
	}
}

// TestNonIntegerBoundsExact: a number with bounds that are not integers,
// inclusive or exclusive, on one side or both, accepts exactly the numbers
// within them (judged with math/big) in the plain decimal form, with any
// number of fraction digits, and nothing outside them in any spelling.
func TestNonIntegerBoundsExact(t *testing.T) {
	values := []string{"1.1", "-0.5", "0.05", "2.25", "-3.125", "100.001"}
	lowers := []string{"minimum", "exclusiveMinimum"}
	uppers := []string{"maximum", "exclusiveMaximum"}
	var sets [][]bdBound
	for _, v := range values {
		for _, k := range append(append([]string{}, lowers...), uppers...) {
			sets = append(sets, []bdBound{{k, v}})
		}
	}
	pairs := [][2]string{
		{"1.1", "2.25"}, {"-0.5", "0.05"}, {"-3.125", "100.001"}, {"-3.125", "-0.5"}, {"0.05", "100.001"},
		{"1.1", "1.1"}, {"2.25", "1.1"}, // one value, and empty bounds
		{"0", "0.05"}, {"-0.5", "0"}, {"1", "2.25"}, {"-3.125", "3"}, {"0.5", "1e1"}, {"-2.5e-1", "1.25e0"},
	}
	for _, p := range pairs {
		for _, lk := range lowers {
			for _, hk := range uppers {
				sets = append(sets, []bdBound{{lk, p[0]}, {hk, p[1]}})
			}
		}
	}
	// both keywords of a side: the tighter one applies
	sets = append(sets,
		[]bdBound{{"minimum", "1.1"}, {"exclusiveMinimum", "1.1"}},
		[]bdBound{{"minimum", "1.25"}, {"exclusiveMinimum", "1.1"}, {"maximum", "2.25"}, {"exclusiveMaximum", "2.5"}},
		[]bdBound{{"minimum", "-0.5"}, {"exclusiveMinimum", "-3.125"}, {"maximum", "0.05"}, {"exclusiveMaximum", "0.05"}},
	)
	texts := bdTexts(t)
	for _, bs := range sets {
		src := bdSchema("number", bs, "")
		t.Run(src, func(t *testing.T) {
			g, ign, err := schema.FromJSONSchema([]byte(src))
			if err != nil {
				// only empty bounds may fail: no text meets them
				var se *schema.SchemaError
				require.True(t, errors.As(err, &se), "%s: %v", src, err)
				meets := bdMeets(t, bs)
				for _, tx := range texts {
					require.False(t, tx.json && meets(tx.x), "%s refused (%v) but %s meets it", src, err, tx.s)
				}
				assert.Contains(t, []string{"minimum", "exclusiveMinimum"}, se.Keyword, err.Error())
				return
			}
			require.Empty(t, ign)
			assert.Less(t, len(g), 4000, "the grammar of %s should stay small:\n%s", src, g)
			bdCheck(t, src, g, texts, false, bdMeets(t, bs))
		})
	}
}

// TestNonIntegerBoundsRandom: random decimal bounds (up to 3 integer and 5
// fraction digits, either sign, one or both sides, inclusive or exclusive)
// against random decimal texts and texts made from the bounds themselves
// (the bound, with digits appended, last digit moved), judged with math/big.
func TestNonIntegerBoundsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	decimal := func(intDigits, fracDigits int) string {
		s := fmt.Sprint(rng.IntN(pow10(intDigits)))
		if fracDigits > 0 {
			s += fmt.Sprintf(".%0*d", fracDigits, rng.IntN(pow10(fracDigits)))
		}
		if rng.IntN(2) == 0 {
			s = "-" + s
		}
		return s
	}
	for range 60 {
		var bs []bdBound
		for _, side := range [][2]string{{"minimum", "exclusiveMinimum"}, {"maximum", "exclusiveMaximum"}} {
			if rng.IntN(4) > 0 {
				bs = append(bs, bdBound{side[rng.IntN(2)], decimal(rng.IntN(4), 1+rng.IntN(5))})
			}
		}
		if len(bs) == 0 {
			continue
		}
		var texts []string
		for range 1500 {
			texts = append(texts, decimal(rng.IntN(4), rng.IntN(7)))
		}
		for _, b := range bs {
			v := strings.TrimPrefix(b.value, "-")
			for _, sign := range []string{"", "-"} {
				texts = append(texts, sign+v, sign+v+"0", sign+v+"00001", sign+v+"9", sign+strings.TrimRight(strings.TrimRight(v, "0"), "."))
				if n := len(v); n > 0 && v[n-1] != '.' {
					for d := byte('0'); d <= '9'; d++ {
						texts = append(texts, sign+v[:n-1]+string(d), sign+v[:n-1]+string(d)+"5")
					}
				}
			}
		}
		src := bdSchema("number", bs, "")
		g, _, err := schema.FromJSONSchema([]byte(src))
		meets := bdMeets(t, bs)
		var checked []bdText
		for _, s := range texts {
			if !bdJSONNumber.MatchString(s) {
				continue // "-00.5" and the like from the trimming above
			}
			x, _ := new(big.Rat).SetString(s)
			negZero := strings.HasPrefix(s, "-") && x.Sign() == 0
			checked = append(checked, bdText{s: s, json: true, plain: bdPlain.MatchString(s) && !negZero, x: x})
		}
		if err != nil {
			var se *schema.SchemaError
			require.True(t, errors.As(err, &se), "%s: %v", src, err)
			for _, tx := range checked {
				require.False(t, meets(tx.x), "%s refused (%v) but %s meets it", src, err, tx.s)
			}
			continue
		}
		bdCheck(t, src, g, checked, false, meets)
	}
}

func pow10(n int) int {
	p := 1
	for range n {
		p *= 10
	}
	return p
}

// TestNonIntegerBoundsCombined: the bounds are exact together with other
// number keywords and inside other schemas (whitespace around, in arrays).
func TestNonIntegerBoundsCombined(t *testing.T) {
	g, _, err := schema.FromJSONSchema([]byte(`{"type":"array","items":{"type":"number","exclusiveMinimum":0.5,"maximum":1.75}}`))
	require.NoError(t, err)
	c := newChecker(t, g)
	for s, want := range map[string]bool{
		`[0.5]`: false, `[0.50001]`: true, `[ 1.75 , 1 ]`: true, `[1.7500]`: true, `[1.75001]`: false, `[0.6,2]`: false, `[]`: true,
	} {
		assert.Equal(t, want, c.accepts(s), s)
	}
	// integer type: the bounds are rounded (exact), unchanged
	g, _, err = schema.FromJSONSchema([]byte(`{"type":"integer","exclusiveMinimum":-2.5,"maximum":3.9}`))
	require.NoError(t, err)
	bdCheck(t, "integer", g, bdTexts(t), true, func(x *big.Rat) bool {
		return x.IsInt() && x.Cmp(big.NewRat(-5, 2)) > 0 && x.Cmp(big.NewRat(39, 10)) <= 0
	})
	// draft 4: boolean exclusiveMinimum
	g, _, err = schema.FromJSONSchema([]byte(`{"$schema":"http://json-schema.org/draft-04/schema#","type":"number","minimum":1.1,"exclusiveMinimum":true,"maximum":2.25,"exclusiveMaximum":false}`))
	require.NoError(t, err)
	c = newChecker(t, g)
	for s, want := range map[string]bool{`1.1`: false, `1.10001`: true, `2.25`: true, `2.250001`: false} {
		assert.Equal(t, want, c.accepts(s), s)
	}
	// a long bound is still small and exact
	long := "12345.678901234567890123456789"
	src := `{"type":"number","minimum":-` + long + `,"exclusiveMaximum":` + long + `}`
	g, _, err = schema.FromJSONSchema([]byte(src))
	require.NoError(t, err)
	c = newChecker(t, g)
	for s, want := range map[string]bool{
		long: false, "-" + long: true, "12345.67890123456789012345678": true, "12345.6789012345678901234567890000001": false,
		"-12345.6789012345678901234567890000001": false, "-12345.678901234567890123456788999": true, "0": true, "12346": false,
	} {
		assert.Equal(t, want, c.accepts(s), s)
	}
}

// TestExactTypesZeroFraction: with ExactTypes every integer grammar (plain,
// bounded, multipleOf, LlamaCppCompat's digit cap) also accepts an integer
// written with a zero fraction ("4.0", "4.000"), which JSON Schema counts as
// an integer; by default it does not (a narrowing). Neither accepts "4." or
// a non-zero fraction.
func TestExactTypesZeroFraction(t *testing.T) {
	cases := []struct {
		schema string
		opts   []schema.Option
		valid  func(n int64) bool
	}{
		{`{"type":"integer"}`, nil, func(int64) bool { return true }},
		{`{"type":"integer","minimum":-3,"exclusiveMaximum":5}`, nil, func(n int64) bool { return n >= -3 && n < 5 }},
		{`{"type":"integer","exclusiveMinimum":-2.5,"maximum":7.5}`, nil, func(n int64) bool { return n > -3 && n <= 7 }},
		{`{"type":"integer","minimum":0}`, nil, func(n int64) bool { return n >= 0 }},
		{`{"type":"integer","multipleOf":3}`, nil, func(n int64) bool { return n%3 == 0 }},
		{`{"type":"integer","multipleOf":1.5,"minimum":-10,"maximum":20}`, nil, func(n int64) bool { return n%3 == 0 && n >= -10 && n <= 20 }},
		{`{"type":"integer","multipleOf":7,"exclusiveMinimum":0}`, nil, func(n int64) bool { return n%7 == 0 && n > 0 }},
		{`{"type":"integer","multipleOf":0.5}`, nil, func(int64) bool { return true }},
		{`{"type":"integer","multipleOf":100003,"minimum":-100003,"maximum":100003}`, nil, func(n int64) bool { return n == 0 }},
		{`{"type":"integer","format":"int8"}`, nil, func(n int64) bool { return n >= -128 && n <= 127 }},
		{`{"type":"integer"}`, []schema.Option{schema.LlamaCppCompat()}, func(int64) bool { return true }},
		{`{"type":"integer","maximum":12}`, []schema.Option{schema.LlamaCppCompat()}, func(n int64) bool { return n <= 12 }},
		{`{"type":["integer","string"]}`, nil, func(int64) bool { return true }},
		{`{"anyOf":[{"type":"integer","minimum":5},{"type":"integer","maximum":-5}]}`, nil, func(n int64) bool { return n >= 5 || n <= -5 }},
	}
	for _, tc := range cases {
		t.Run(tc.schema, func(t *testing.T) {
			ge, _, err := schema.FromJSONSchema([]byte(tc.schema), append([]schema.Option{schema.ExactTypes()}, tc.opts...)...)
			require.NoError(t, err)
			gd, _, err := schema.FromJSONSchema([]byte(tc.schema), tc.opts...)
			require.NoError(t, err)
			exact, def := newChecker(t, ge), newChecker(t, gd)
			for n := int64(-150); n <= 150; n++ {
				s := fmt.Sprint(n)
				want := tc.valid(n)
				assert.Equal(t, want, exact.accepts(s), "ExactTypes %s: %s", tc.schema, s)
				assert.Equal(t, want, def.accepts(s), "default %s: %s", tc.schema, s)
				for _, z := range []string{".0", ".00", ".000000"} {
					assert.Equal(t, want, exact.accepts(s+z), "ExactTypes %s: %s", tc.schema, s+z)
					assert.False(t, def.accepts(s+z), "default %s: %s", tc.schema, s+z)
				}
				for _, z := range []string{".", ".5", ".01", ".0001", "..0", ".0.0"} {
					assert.False(t, exact.accepts(s+z), "ExactTypes %s: %s", tc.schema, s+z)
					assert.False(t, def.accepts(s+z), "default %s: %s", tc.schema, s+z)
				}
			}
		})
	}
}

// TestBoundRefusalKeywords: a refusal (or an empty range) names the keyword
// the schema wrote: exclusiveMinimum and exclusiveMaximum are not reported
// as minimum and maximum.
func TestBoundRefusalKeywords(t *testing.T) {
	tooLong := "0." + strings.Repeat("0", 1100) + "1"
	manyDigits := strings.Repeat("12", 400) + ".5" // few fraction digits, too many states
	cases := []struct {
		schema, keyword string
		lenientOK       bool // Lenient lists it and converts
	}{
		{`{"type":"number","exclusiveMinimum":` + tooLong + `}`, "exclusiveMinimum", true},
		{`{"type":"number","minimum":` + tooLong + `}`, "minimum", true},
		{`{"type":"number","exclusiveMaximum":` + tooLong + `}`, "exclusiveMaximum", true},
		{`{"type":"number","maximum":-` + tooLong + `}`, "maximum", true},
		{`{"type":"number","exclusiveMinimum":1e-2000,"maximum":5}`, "exclusiveMinimum", true},
		{`{"type":"number","minimum":-1,"exclusiveMaximum":1e-2000}`, "exclusiveMaximum", true},
		{`{"type":"number","minimum":1,"exclusiveMaximum":1e-2000}`, "minimum", false}, // empty, found before the automaton
		{`{"$schema":"http://json-schema.org/draft-04/schema#","type":"number","minimum":` + tooLong + `,"exclusiveMinimum":true}`, "exclusiveMinimum", true},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","type":"number","maximum":` + tooLong + `,"exclusiveMaximum":true}`, "exclusiveMaximum", true},
		{`{"type":"number","minimum":1.5,"exclusiveMaximum":` + manyDigits + `}`, "exclusiveMaximum", true},
		{`{"type":"number","exclusiveMinimum":-` + manyDigits + `,"maximum":2.25}`, "exclusiveMinimum", true},
		{`{"type":"number","minimum":` + manyDigits + `}`, "minimum", true},
		// empty ranges
		{`{"type":"number","minimum":` + manyDigits + `,"maximum":1.5}`, "minimum", false},
		{`{"type":"integer","exclusiveMinimum":5,"exclusiveMaximum":5}`, "exclusiveMinimum", false},
		{`{"type":"integer","exclusiveMaximum":5,"minimum":5}`, "minimum", false},
		{`{"type":"integer","exclusiveMaximum":-5,"exclusiveMinimum":-5.5}`, "exclusiveMinimum", false},
		{`{"type":"number","exclusiveMinimum":2,"maximum":2}`, "exclusiveMinimum", false},
		{`{"type":"number","exclusiveMinimum":2.5,"exclusiveMaximum":2.5}`, "exclusiveMinimum", false},
		{`{"type":"number","minimum":2.5,"exclusiveMaximum":1}`, "minimum", false},
	}
	for _, tc := range cases {
		name := tc.schema
		if len(name) > 120 {
			name = name[:60] + "..." + name[len(name)-40:]
		}
		t.Run(name, func(t *testing.T) {
			_, _, err := schema.FromJSONSchema([]byte(tc.schema))
			var se *schema.SchemaError
			require.True(t, errors.As(err, &se), "want a *SchemaError, got %v", err)
			assert.Equal(t, tc.keyword, se.Keyword, se.Error())
			if !tc.lenientOK {
				return
			}
			assert.Contains(t, se.Msg, "cannot be enforced")
			g, ign, err := schema.FromJSONSchema([]byte(tc.schema), schema.Lenient())
			require.NoError(t, err)
			require.Len(t, ign, 1)
			assert.Equal(t, tc.keyword, ign[0].Keyword)
			newChecker(t, g)
		})
	}
}

// TestLenientLongBound: Lenient lets a bound too long for the automaton
// through (listed), and the other bound is still enforced exactly.
func TestLenientLongBound(t *testing.T) {
	long := strings.Repeat("12", 400) + ".5"
	cases := []struct {
		schema, keyword string
		accept, reject  []string
	}{
		{`{"type":"number","exclusiveMinimum":1.5,"maximum":` + long + `}`, "maximum", []string{"1.50001", "2", "1" + long}, []string{"1.5", "1.2", "-3"}},
		{`{"type":"number","minimum":-` + long + `,"exclusiveMaximum":-2.25}`, "minimum", []string{"-2.2500001", "-3", "-1" + long}, []string{"-2.25", "-2", "0"}},
		{`{"type":"number","minimum":-` + long + `,"maximum":7}`, "minimum", []string{"7", "-1" + long, "6.999"}, []string{"7.0001", "8"}},
	}
	for _, tc := range cases {
		g, ign, err := schema.FromJSONSchema([]byte(tc.schema), schema.Lenient())
		require.NoError(t, err)
		require.Len(t, ign, 1)
		assert.Equal(t, tc.keyword, ign[0].Keyword)
		c := newChecker(t, g)
		for _, s := range tc.accept {
			assert.True(t, c.accepts(s), "%s should accept %s", tc.keyword, s)
		}
		for _, s := range tc.reject {
			assert.False(t, c.accepts(s), "%s should reject %s", tc.keyword, s)
		}
	}
}
