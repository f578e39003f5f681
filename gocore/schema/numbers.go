package schema

import (
	"math/big"
	"strings"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// Exact grammars for integer ranges. A range is a pair of *big.Int bounds, nil
// for unbounded. Integers are written without leading zeros and never as -0.

var (
	bigOne = big.NewInt(1)
	bigTen = big.NewInt(10)
)

// intRangeExpr is the grammar of the integers in [lo, hi]; ok is false when the
// range is empty. maxDigits > 0 caps the magnitude at that many digits.
func intRangeExpr(lo, hi *big.Int, maxDigits int) (expr string, ok bool) {
	var capv *big.Int
	if maxDigits > 0 {
		capv = new(big.Int).Sub(new(big.Int).Exp(bigTen, big.NewInt(int64(maxDigits)), nil), bigOne)
	}
	var alts []string
	// negative part: magnitudes in [a, b]
	if lo == nil || lo.Sign() < 0 {
		a := big.NewInt(1)
		if hi != nil && hi.Sign() < 0 {
			a = new(big.Int).Neg(hi)
		}
		var b *big.Int
		if lo != nil {
			b = new(big.Int).Neg(lo)
		}
		b = minBig(b, capv)
		if x, ok := magRange(a, b); ok {
			alts = append(alts, `"-" `+group(x))
		}
	}
	if hi == nil || hi.Sign() >= 0 {
		a := big.NewInt(0)
		if lo != nil && lo.Sign() > 0 {
			a = lo
		}
		b := minBig(hi, capv)
		if x, ok := magRange(a, b); ok {
			alts = append(alts, x)
		}
	}
	if len(alts) == 0 {
		return "", false
	}
	return alt(alts), true
}

// minBig is the smaller of a and b, where nil is +infinity.
func minBig(a, b *big.Int) *big.Int {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.Cmp(b) <= 0:
		return a
	}
	return b
}

// magRange is the grammar of the decimal numerals (no leading zeros) of the
// values in [a, b], 0 <= a, b nil for unbounded.
func magRange(a, b *big.Int) (string, bool) {
	if b != nil && a.Cmp(b) > 0 {
		return "", false
	}
	as := a.String()
	var alts []string
	if b == nil {
		// lengths len(as) (from a up) and anything longer
		hiSame := strings.Repeat("9", len(as))
		alts = append(alts, sameLen(as, hiSame))
		alts = append(alts, `[1-9] [0-9]`+countSuffix(len(as), -1))
		return "(" + alt(alts) + ")", true
	}
	bs := b.String()
	for L := len(as); L <= len(bs); L++ {
		lo := "1" + strings.Repeat("0", L-1)
		if L == 1 {
			lo = "0"
		}
		if L == len(as) {
			lo = as
		}
		hi := strings.Repeat("9", L)
		if L == len(bs) {
			hi = bs
		}
		alts = append(alts, sameLen(lo, hi))
	}
	if len(alts) == 1 {
		return alts[0], true
	}
	return "(" + alt(alts) + ")", true
}

// countSuffix writes a repetition suffix {lo,hi} for a preceding atom.
func countSuffix(lo, hi int) string {
	switch {
	case lo == 0 && hi < 0:
		return "*"
	case lo == 1 && hi < 0:
		return "+"
	case hi < 0:
		return "{" + itoa(lo) + ",}"
	case lo == hi:
		return "{" + itoa(lo) + "}"
	}
	return "{" + itoa(lo) + "," + itoa(hi) + "}"
}

func itoa(n int) string { return big.NewInt(int64(n)).String() }

// sameLen is the grammar of the numerals of one length between lo and hi.
func sameLen(lo, hi string) string {
	if lo == hi {
		return gbnf.QuoteLiteral(lo)
	}
	n := len(lo)
	if lo[0] == hi[0] {
		return seq(gbnf.QuoteLiteral(lo[:1]), group(sameLen(lo[1:], hi[1:])))
	}
	rest := func(d0, d1 byte) string {
		if n == 1 {
			return digitClass(d0, d1)
		}
		return seq(digitClass(d0, d1), "[0-9]"+countSuffix(n-1, n-1))
	}
	loZero := strings.Trim(lo[1:], "0") == ""
	hiNine := strings.Trim(hi[1:], "9") == ""
	var alts []string
	first, last := lo[0], hi[0]
	if !loZero {
		alts = append(alts, seq(gbnf.QuoteLiteral(lo[:1]), group(sameLen(lo[1:], strings.Repeat("9", n-1)))))
		first++
	}
	if !hiNine {
		last--
	}
	if first <= last {
		alts = append(alts, rest(first, last))
	}
	if !hiNine {
		alts = append(alts, seq(gbnf.QuoteLiteral(hi[:1]), group(sameLen(strings.Repeat("0", n-1), hi[1:]))))
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return "(" + alt(alts) + ")"
}

func digitClass(a, b byte) string {
	if a == b {
		return gbnf.QuoteLiteral(string(a))
	}
	return "[" + string(a) + "-" + string(b) + "]"
}

// ratFloor and ratCeil round a rational to an integer.
func ratFloor(r *big.Rat) *big.Int {
	q := new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: floor for positive denominators
	return q
}

func ratCeil(r *big.Rat) *big.Int {
	q := ratFloor(r)
	if !r.IsInt() {
		q.Add(q, bigOne)
	}
	return q
}

// numberRangeExpr is the grammar of the decimal numbers (no exponent) x with
// lo <= x <= hi (or < when the bound is exclusive), for integer bounds; nil
// bounds are unbounded. Numbers are split by sign and by whether the fraction has
// a non-zero digit, and for each part the bound becomes a range of the integer
// part, which is exact: for x = I + F with 0 < F < 1 and an integer L,
// x >= L and x > L both mean I >= L, and x <= U and x < U both mean I <= U-1.
//
// frac is the grammar of a fraction's digits with a non-zero digit ("" when
// none is allowed, as for multipleOf 1).
func numberRangeExpr(lo, hi *big.Int, loExcl, hiExcl bool, frac string) (string, bool) {
	var alts []string
	// whole values: an integer, optionally with a zero fraction
	wlo, whi := lo, hi
	if lo != nil && loExcl {
		wlo = new(big.Int).Add(lo, bigOne)
	}
	if hi != nil && hiExcl {
		whi = new(big.Int).Sub(hi, bigOne)
	}
	if x, ok := intRangeExpr(wlo, whi, 0); ok {
		alts = append(alts, seq(group(x), `("." "0"+)?`))
	}
	// positive with a non-zero fraction: I in [max(0, L), U-1]
	if frac != "" {
		a := big.NewInt(0)
		if lo != nil && lo.Sign() > 0 {
			a = lo
		}
		var b *big.Int
		if hi != nil {
			b = new(big.Int).Sub(hi, bigOne)
		}
		if b == nil || b.Sign() >= 0 {
			if x, ok := magRange(a, b); ok {
				alts = append(alts, seq(group(x), `"."`, frac))
			}
		}
	}
	// negative with a non-zero fraction: I in [max(0, -U), -L-1]
	if frac != "" {
		a := big.NewInt(0)
		if hi != nil && hi.Sign() < 0 {
			a = new(big.Int).Neg(hi)
		}
		var b *big.Int
		if lo != nil {
			b = new(big.Int).Sub(new(big.Int).Neg(lo), bigOne)
		}
		if b == nil || b.Sign() >= 0 {
			if x, ok := magRange(a, b); ok {
				alts = append(alts, seq(`"-"`, group(x), `"."`, frac))
			}
		}
	}
	if len(alts) == 0 {
		return "", false
	}
	return alt(alts), true
}
