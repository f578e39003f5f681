package schema

import (
	"encoding/json"
	"fmt"
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

// ---- multipleOf ----

// A multipleOf m is a finite decimal p/10^d (every JSON number is one), and x is
// a multiple of m iff N = x*10^d is an integer divisible by p. multipleExpr
// writes the numbers that are multiples as a deterministic automaton over the
// characters of their text ("-", digits, "."): it follows N's remainder modulo
// p digit by digit (the fraction's digits are N's last d digits, those not
// written being zeros), and compares N's digits with those of the bounds,
// scaled by 10^d too, which makes every bound exact, rational or not (N is an
// integer: x >= lo is N >= ceil(lo*10^d)). The automaton is trimmed,
// minimized and written as right-linear rules (dfa.grammar): one rule per
// state, so the engine follows a single stack. Where p is too large for it but
// the bounds hold few multiples, the same language comes from the trie of
// their texts (multipleTrie). A multipleOf whose minimal automaton would have
// more than maxMultipleStates states is refused (an unbounded side alone needs
// one state per remainder modulo the part of p prime to 10).
//
// The text is narrower than JSON's: no exponent, no leading zeros, no "-0"
// (nor "-0.0"); an integer has no fraction (except a zero one, "4.0", under
// ExactTypes); a number's fraction may have any number of digits, but those
// past the d-th must be zeros ("4", "4.0", "4.5" and "4.50" for multipleOf
// 0.5).

// maxMultipleStates bounds the automaton of a multipleOf (one rule per state,
// of up to ten alternatives: the remainder modulo 999 takes 1,002 states and
// 215 kB). maxMultipleBuild bounds the states built before minimization, and
// maxMultipleList the multiples in the bounds written as a trie when the
// remainder automaton cannot be built.
const (
	maxMultipleStates = 1024
	maxMultipleBuild  = 1 << 14
	maxMultipleList   = 2000
)

// multipleDecimal writes m > 0 as p/10^d with d as small as it can be; ok is
// false when d would be above maxMultipleStates.
func multipleDecimal(m *big.Rat) (p *big.Int, d int, ok bool) {
	if m.Denom().BitLen() > 4*maxMultipleStates {
		return nil, 0, false // d > maxMultipleStates: 10^d has 3.3*d bits, 2^d d
	}
	d, ok = decimalDigits(m)
	if !ok {
		return nil, 0, false // not a finite decimal (no JSON number is one)
	}
	p = new(big.Int).Mul(m.Num(), new(big.Int).Exp(bigTen, big.NewInt(int64(d)), nil))
	p.Quo(p, m.Denom())
	return p, d, true
}

// decimalDigits is the number of fraction digits of r written as a decimal
// (the smallest d with r*10^d an integer); ok is false when r is not a finite
// decimal.
func decimalDigits(r *big.Rat) (d int, ok bool) {
	den := new(big.Int).Set(r.Denom())
	twos, fives := int(den.TrailingZeroBits()), 0
	den.Rsh(den, uint(twos))
	five, rem := big.NewInt(5), new(big.Int)
	for {
		q, r := new(big.Int).QuoRem(den, five, rem)
		if r.Sign() != 0 {
			break
		}
		den = q
		fives++
	}
	if den.Cmp(bigOne) != 0 {
		return 0, false
	}
	return max(twos, fives), true
}

// lcmMultiple is the multipleOf that says what multipleOf a and multipleOf b
// say together: the multiples of both rationals a = p/q and b = r/s (in lowest
// terms) are those of lcm(p, r)/gcd(q, s). ok is false unless both are
// positive numbers.
func lcmMultiple(a, b any) (any, bool) {
	an, ok1 := a.(json.Number)
	bn, ok2 := b.(json.Number)
	if !ok1 || !ok2 {
		return nil, false
	}
	ar, ok1 := ratOf(an)
	br, ok2 := ratOf(bn)
	if !ok1 || !ok2 || ar.Sign() <= 0 || br.Sign() <= 0 {
		return nil, false
	}
	g := new(big.Int).GCD(nil, nil, ar.Num(), br.Num())
	num := new(big.Int).Mul(ar.Num(), new(big.Int).Quo(br.Num(), g))
	den := new(big.Int).GCD(nil, nil, ar.Denom(), br.Denom())
	r := new(big.Rat).SetFrac(num, den)
	_, d, ok := multipleDecimal(r)
	if !ok {
		return nil, false
	}
	return json.Number(r.FloatString(d)), true
}

// mbound is a bound on N's magnitude: its digits before the last d (i, "0"
// when there are none) and its last d digits (f). An exclusive bound (excl)
// is only met by a magnitude that differs from it; the bounds of multiples
// are inclusive (they are tightened to multiples first).
type mbound struct {
	i, f string
	excl bool
}

func scaledBound(n *big.Int, d int) *mbound {
	if n == nil {
		return nil
	}
	s := n.String()
	if len(s) <= d {
		s = strings.Repeat("0", d+1-len(s)) + s
	}
	return &mbound{i: s[:len(s)-d], f: s[len(s)-d:]}
}

// Phases of the text of a multiple.
const (
	mStart = iota // nothing read
	mSign         // "-" read
	mInt          // integer digits, the first non-zero
	mZero         // the integer part "0"
	mFrac         // "." and fraction digits
)

// mstate is a state of the automaton of multiples. In the integer part, n is
// the number of digits read (capped where no bound needs more) and lo, hi
// compare the digits read with as many of the bound's integer digits (-1, 0,
// +1), or are 2 once there are more digits than the bound's; in the fraction,
// n is the number of digits read (at most d) and lo, hi compare N's digits so
// far with the bound's (-1, 0, +1). r is the remainder modulo p of N's digits
// so far; dig says the fraction has a digit.
type mstate struct {
	phase  uint8
	neg    bool
	dig    bool
	lo, hi int8
	n      int32
	r      int32
}

// multipleAuto describes the automaton: N multiple of p, d fraction digits,
// bounds on the magnitude of the positive (pos) and negative (neg) numbers.
//
// With free set (p = 1: no multipleOf, for bounds that are not integers), a
// fraction may have more than d digits: those past the d-th are any digits,
// and a non-zero one makes the number larger than a bound it equalled so far
// (x > 1.1 iff x's first fraction digit makes it larger, or it is 1.1 and a
// later digit is non-zero).
type multipleAuto struct {
	p       int32
	d       int
	integer bool
	free    bool
	posOK   bool
	negOK   bool
	pos     [2]*mbound // lo, hi
	neg     [2]*mbound
	capN    [2]int32 // the integer-digit count past which n stays the same, per sign
	pow     []int32  // 10^k mod p for k <= d
}

func sign8(x int) int8 {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

func (m *multipleAuto) bounds(neg bool) [2]*mbound {
	if neg {
		return m.neg
	}
	return m.pos
}

// intStep compares one more integer digit (the n-th, from 0) with bound b.
func intStep(c int8, b *mbound, n int32, digit byte) int8 {
	switch {
	case b == nil:
		return 0
	case c == 2 || int(n) >= len(b.i):
		return 2
	case c != 0:
		return c
	}
	return sign8(int(digit) - int(b.i[n]))
}

// intEnd is the comparison of an integer part of n digits with b's.
func intEnd(c int8, b *mbound, n int32) int8 {
	switch {
	case b == nil:
		return 0
	case c == 2:
		return 1
	case int(n) < len(b.i):
		return -1
	}
	return c
}

// fracEnd completes a comparison when j fraction digits were read: the
// missing ones are zeros.
func fracEnd(c int8, b *mbound, j int) int8 {
	if b != nil && c == 0 && strings.Trim(b.f[j:], "0") != "" {
		return -1
	}
	return c
}

func (m *multipleAuto) accept(s mstate) bool {
	bs := m.bounds(s.neg)
	var lo, hi int8
	j := 0
	switch s.phase {
	case mInt, mZero:
		lo, hi = intEnd(s.lo, bs[0], s.n), intEnd(s.hi, bs[1], s.n)
	case mFrac:
		if !s.dig {
			return false
		}
		lo, hi, j = s.lo, s.hi, int(s.n)
	default:
		return false
	}
	lo, hi = fracEnd(lo, bs[0], j), fracEnd(hi, bs[1], j)
	return boundMet(lo, bs[0]) && boundMet(-hi, bs[1]) && int64(s.r)*int64(m.pow[m.d-j])%int64(m.p) == 0
}

// boundMet says whether a magnitude compared c (-1, 0, +1) with a lower bound
// b meets it (an upper bound: -c).
func boundMet(c int8, b *mbound) bool {
	return c > 0 || c == 0 && (b == nil || !b.excl)
}

// live is false for states from which no text reaches a multiple in range
// (those trim would remove anyway, found early).
func (m *multipleAuto) live(s mstate) bool {
	bs := m.bounds(s.neg)
	switch s.phase {
	case mInt, mZero:
		return bs[1] == nil || !(s.hi == 2 || s.hi == 1 && int(s.n) >= len(bs[1].i))
	case mFrac:
		if bs[0] != nil && s.lo < 0 || bs[1] != nil && s.hi > 0 {
			return false
		}
		if int(s.n) < m.d {
			return true
		}
		// past the d-th digit: zeros change nothing, and (free) a non-zero
		// digit makes the number larger than a bound it equalled
		done := s
		done.dig = true
		if m.accept(done) {
			return true
		}
		if m.free {
			done.lo, done.hi = bumpEqual(done.lo, bs[0]), bumpEqual(done.hi, bs[1])
			return m.accept(done)
		}
		return false
	}
	return true
}

// step is the state after character ch (ok false: none).
func (m *multipleAuto) step(s mstate, ch byte) (mstate, bool) {
	bs := m.bounds(s.neg)
	digit := ch >= '0' && ch <= '9'
	switch s.phase {
	case mStart, mSign:
		if s.phase == mStart && ch == '-' {
			return mstate{phase: mSign, neg: true}, m.negOK
		}
		if !digit || s.phase == mStart && !m.posOK {
			return s, false
		}
		t := mstate{phase: mInt, neg: s.neg, n: 1, r: int32(ch-'0') % m.p}
		if ch == '0' {
			t.phase = mZero
		}
		t.lo, t.hi = intStep(0, bs[0], 0, ch), intStep(0, bs[1], 0, ch)
		return t, true
	case mInt, mZero:
		if ch == '.' {
			if m.integer {
				return s, false
			}
			return mstate{phase: mFrac, neg: s.neg, lo: intEnd(s.lo, bs[0], s.n), hi: intEnd(s.hi, bs[1], s.n), r: s.r}, true
		}
		if !digit || s.phase == mZero {
			return s, false
		}
		t := s
		t.lo, t.hi = intStep(s.lo, bs[0], s.n, ch), intStep(s.hi, bs[1], s.n, ch)
		t.n = min(s.n+1, m.capN[b2i(s.neg)])
		t.r = int32((int64(s.r)*10 + int64(ch-'0')) % int64(m.p))
		return t, true
	case mFrac:
		if !digit {
			return s, false
		}
		t := s
		t.dig = true
		if int(s.n) == m.d {
			if !m.free {
				return t, ch == '0' // past the d-th digit only zeros
			}
			if ch != '0' {
				t.lo, t.hi = bumpEqual(t.lo, bs[0]), bumpEqual(t.hi, bs[1])
			}
			return t, true
		}
		j := s.n
		if bs[0] != nil && t.lo == 0 {
			t.lo = sign8(int(ch) - int(bs[0].f[j]))
		}
		if bs[1] != nil && t.hi == 0 {
			t.hi = sign8(int(ch) - int(bs[1].f[j]))
		}
		t.n++
		t.r = int32((int64(s.r)*10 + int64(ch-'0')) % int64(m.p))
		return t, true
	}
	return s, false
}

// bumpEqual is the comparison with bound b once a non-zero digit follows the
// bound's last one: an equality becomes "larger".
func bumpEqual(c int8, b *mbound) int8 {
	if b != nil && c == 0 {
		return 1
	}
	return c
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// build explores the automaton from the start (nil: more than
// maxMultipleBuild states).
func (m *multipleAuto) build() *dfa {
	const chars = "-.0123456789"
	out := &dfa{}
	index := map[mstate]int32{}
	var states []mstate
	add := func(s mstate) (int32, bool) {
		if i, ok := index[s]; ok {
			return i, true
		}
		if len(states) >= maxMultipleBuild {
			return 0, false
		}
		i := int32(len(states))
		index[s] = i
		states = append(states, s)
		out.states = append(out.states, dstate{accept: m.accept(s)})
		return i, true
	}
	add(mstate{})
	for si := 0; si < len(states); si++ {
		var edges []dedge
		for k := 0; k < len(chars); k++ {
			t, ok := m.step(states[si], chars[k])
			if !ok || !m.live(t) {
				continue
			}
			to, ok := add(t)
			if !ok {
				return nil
			}
			r := rune(chars[k])
			if n := len(edges); n > 0 && edges[n-1].to == to && edges[n-1].hi+1 == r {
				edges[n-1].hi = r
				continue
			}
			edges = append(edges, dedge{r, r, to})
		}
		out.states[si].edges = edges
	}
	return out
}

// multipleExpr is the grammar of the multiples of mult within the bounds (nil:
// none), integers only when integer is set; ok is false when the multipleOf
// was ignored (Lenient) because the automaton would be too large.
func (c *conv) multipleExpr(mult, lo, hi *big.Rat, loExcl, hiExcl, integer bool, ptr string) (string, bool, error) {
	memo := numberMemoKey("multiple", mult, lo, hi, loExcl, hiExcl, integer)
	if x, ok := c.strings[memo]; ok {
		return x, true, nil
	}
	p, d, ok := multipleDecimal(mult)
	if !ok || d > maxMultipleStates {
		return "", false, c.unsupported("multipleOf", ptr, fmt.Sprintf("a multipleOf with more than %d fraction digits cannot be enforced", maxMultipleStates))
	}
	text := shortNumber(mult.FloatString(d))
	if integer {
		// an integer x is a multiple iff x*10^d is one of p: iff p/gcd(p, 10^d) divides x
		g := new(big.Int).GCD(nil, nil, p, new(big.Int).Exp(bigTen, big.NewInt(int64(d)), nil))
		p.Quo(p, g)
		d = 0
	}
	tooLarge := func() (string, bool, error) {
		return "", false, c.unsupported("multipleOf", ptr, fmt.Sprintf("multipleOf %s cannot be enforced: its automaton (the remainder modulo %s, digit by digit, with the bounds) needs more than %d states",
			text, shortNumber(p.String()), maxMultipleStates))
	}
	scale := new(big.Rat).SetInt(new(big.Int).Exp(bigTen, big.NewInt(int64(d)), nil))
	var nlo, nhi *big.Int // bounds on N = x*10^d, tightened to multiples of p
	if lo != nil {
		s := new(big.Rat).Mul(lo, scale)
		if loExcl {
			nlo = new(big.Int).Add(ratFloor(s), bigOne)
		} else {
			nlo = ratCeil(s)
		}
	}
	if hi != nil {
		s := new(big.Rat).Mul(hi, scale)
		if hiExcl {
			nhi = new(big.Int).Sub(ratCeil(s), bigOne)
		} else {
			nhi = ratFloor(s)
		}
	}
	if integer && c.cfg.maxIntDigits > 0 {
		capv := new(big.Int).Sub(new(big.Int).Exp(bigTen, big.NewInt(int64(c.cfg.maxIntDigits)), nil), bigOne)
		nhi = minBig(nhi, capv)
		negCap := new(big.Int).Neg(capv)
		if nlo == nil || nlo.Cmp(negCap) < 0 {
			nlo = negCap
		}
	}
	if nlo != nil {
		nlo = new(big.Int).Mul(ratCeil(new(big.Rat).SetFrac(nlo, p)), p)
	}
	if nhi != nil {
		nhi = new(big.Int).Mul(ratFloor(new(big.Rat).SetFrac(nhi, p)), p)
	}
	if nlo != nil && nhi != nil && nlo.Cmp(nhi) > 0 {
		return "", false, c.unsatf("multipleOf", ptr, "no multiple of %s lies within the bounds", text)
	}
	// Both ways below write the same language, so their minimal automata are
	// the same: the remainder automaton when it is small enough to build, else
	// (a large p) the trie of the few multiples in the bounds.
	// Where the numbers are unbounded on one side, those with many digits
	// there take every remainder modulo q, the part of p prime to 10, and no
	// two remainders can share a state: a minimal automaton has q states at
	// least.
	q := new(big.Int).Set(p)
	for _, f := range []int64{2, 5} {
		fb, r := big.NewInt(f), new(big.Int)
		for {
			quo, rem := new(big.Int).QuoRem(q, fb, r)
			if rem.Sign() != 0 {
				break
			}
			q = quo
		}
	}
	if (nlo == nil || nhi == nil) && q.Cmp(big.NewInt(maxMultipleStates)) > 0 {
		return tooLarge()
	}
	// ExactTypes: an integer may be written with a zero fraction ("4.0"), which
	// the automaton of a number with d = 0 reads
	intText := integer && !c.cfg.exactTypes
	var auto *dfa
	if p.Cmp(big.NewInt(maxMultipleBuild)) <= 0 {
		auto = newMultipleAuto(p, d, nlo, nhi, intText).build()
	}
	if auto == nil && nlo != nil && nhi != nil {
		count := new(big.Int).Quo(new(big.Int).Sub(nhi, nlo), p)
		if count.Cmp(big.NewInt(maxMultipleList)) < 0 {
			auto = multipleTrie(p, d, nlo, nhi, intText)
		}
	}
	if auto == nil {
		return tooLarge()
	}
	auto = auto.trim()
	if auto.empty() {
		return "", false, c.unsatf("multipleOf", ptr, "no multiple of %s lies within the bounds", text)
	}
	auto = auto.minimize()
	if len(auto.states) > maxMultipleStates {
		return tooLarge()
	}
	x := auto.grammar(&regexConv{b: c.b}, "multiple")
	c.strings[memo] = x
	return x, true, nil
}

// shortNumber abbreviates a long numeral for a message.
func shortNumber(s string) string {
	if len(s) <= 24 {
		return s
	}
	return s[:10] + "..." + s[len(s)-10:] + " (" + itoa(len(s)) + " characters)"
}

// newMultipleAuto describes the automaton of the multiples N of p in [nlo,
// nhi] (nil: unbounded), for numbers with d fraction digits.
func newMultipleAuto(p *big.Int, d int, nlo, nhi *big.Int, integer bool) *multipleAuto {
	m := &multipleAuto{p: int32(p.Int64()), d: d, integer: integer}
	// positive or zero: N in [max(0, nlo), nhi]
	if nhi == nil || nhi.Sign() >= 0 {
		m.posOK = true
		a := big.NewInt(0)
		if nlo != nil && nlo.Sign() > 0 {
			a = nlo
		}
		m.pos = [2]*mbound{scaledBound(a, d), scaledBound(nhi, d)}
	}
	// negative: -N in [max(1, -nhi), -nlo]
	if nlo == nil || nlo.Sign() < 0 {
		m.negOK = true
		a := big.NewInt(1)
		if nhi != nil && nhi.Sign() < 0 {
			a = new(big.Int).Neg(nhi)
		}
		var b *big.Int
		if nlo != nil {
			b = new(big.Int).Neg(nlo)
		}
		m.neg = [2]*mbound{scaledBound(a, d), scaledBound(b, d)}
	}
	m.setup()
	return m
}

// setup computes capN and pow once the bounds are set.
func (m *multipleAuto) setup() {
	for k, bs := range [][2]*mbound{m.pos, m.neg} {
		for _, b := range bs {
			if b != nil {
				m.capN[k] = max(m.capN[k], int32(len(b.i)))
			}
		}
		m.capN[k]++
	}
	m.pow = make([]int32, m.d+1)
	m.pow[0] = 1 % m.p
	for k := 1; k <= m.d; k++ {
		m.pow[k] = int32(int64(m.pow[k-1]) * 10 % int64(m.p))
	}
}

// ---- bounds that are not integers ----

// decimalRangeExpr is the grammar of the numbers x within bounds (nil: none)
// of which one at least is not an integer, with any number of fraction
// digits: the automaton of the multiples of 1 with d the bounds' fraction
// digits, the digits past the d-th free (multipleAuto.free). Its text is that
// of multipleExpr (no exponent, no leading zeros, no "-0" nor "-0.0") with
// any fraction. It has a few states per digit of the bounds; bounds too long
// for maxMultipleStates are refused, naming the keyword of the bound that is
// not an integer (loKey or hiKey); empty bounds name loKey (hiKey without a
// lower bound). drop is -1 (the lower bound) or +1 (the upper one) when that
// bound was too long and Lenient let it through: the caller goes on without
// it, the other bound still enforced.
func (c *conv) decimalRangeExpr(lo, hi *big.Rat, loExcl, hiExcl bool, loKey, hiKey, ptr string) (x string, drop int, err error) {
	memo := numberMemoKey("range", nil, lo, hi, loExcl, hiExcl, false)
	if x, ok := c.strings[memo]; ok {
		return x, 0, nil
	}
	unsatKey := loKey
	if lo == nil {
		unsatKey = hiKey
	}
	if lo != nil && hi != nil {
		if cmp := lo.Cmp(hi); cmp > 0 || cmp == 0 && (loExcl || hiExcl) {
			return "", 0, c.unsatf(unsatKey, ptr, "no number lies within the bounds")
		}
	}
	// key names the longer bound that is not an integer, in a refusal (keySide
	// says which: -1 lower, +1 upper)
	key, keySide, keyLen := "", 0, -1
	tooLarge := func(k string, side int, why string) (string, int, error) {
		return "", side, c.unsupported(k, ptr, "a bound that is not an integer cannot be enforced: "+why)
	}
	d := 0
	for i, r := range []*big.Rat{lo, hi} {
		if r == nil {
			continue
		}
		k, side := []string{loKey, hiKey}[i], 2*i-1
		// a denominator 2^a*5^b of more than 4*maxMultipleStates bits has
		// max(a, b) > maxMultipleStates: no need to factor it
		fd, ok := 0, r.Denom().BitLen() <= 4*maxMultipleStates
		if ok {
			fd, ok = decimalDigits(r)
		}
		if !ok || fd > maxMultipleStates {
			return tooLarge(k, side, fmt.Sprintf("it has more than %d fraction digits", maxMultipleStates))
		}
		d = max(d, fd)
		if n := r.Num().BitLen() + fd*4; !r.IsInt() && n > keyLen {
			key, keySide, keyLen = k, side, n
		}
	}
	scale := new(big.Int).Exp(bigTen, big.NewInt(int64(d)), nil)
	// mag is the bound |r|*10^d as a bound on the magnitude (an integer)
	mag := func(r *big.Rat, excl bool) *mbound {
		n := new(big.Int).Mul(r.Num(), scale)
		n.Quo(n, r.Denom())
		b := scaledBound(n.Abs(n), d)
		b.excl = excl
		return b
	}
	m := &multipleAuto{p: 1, d: d, free: true}
	// zero or positive: |x| from max(0, lo) up to hi
	if hi == nil || hi.Sign() > 0 || hi.Sign() == 0 && !hiExcl {
		m.posOK = true
		if lo != nil && lo.Sign() >= 0 {
			m.pos[0] = mag(lo, loExcl)
		}
		if hi != nil {
			m.pos[1] = mag(hi, hiExcl)
		}
	}
	// negative: |x| > 0 (no "-0") from -hi when hi < 0, up to -lo
	if lo == nil || lo.Sign() < 0 {
		m.negOK = true
		if hi != nil && hi.Sign() < 0 {
			m.neg[0] = mag(hi, hiExcl)
		} else {
			m.neg[0] = &mbound{i: "0", f: strings.Repeat("0", d), excl: true}
		}
		if lo != nil {
			m.neg[1] = mag(lo, loExcl)
		}
	}
	m.setup()
	auto := m.build()
	if auto == nil {
		return tooLarge(key, keySide, fmt.Sprintf("its digits make an automaton of more than %d states (before minimization)", maxMultipleBuild))
	}
	auto = auto.trim()
	if auto.empty() {
		return "", 0, c.unsatf(unsatKey, ptr, "no number lies within the bounds")
	}
	auto = auto.minimize()
	if len(auto.states) > maxMultipleStates {
		return tooLarge(key, keySide, fmt.Sprintf("its digits make an automaton of more than %d states", maxMultipleStates))
	}
	x = auto.grammar(&regexConv{b: c.b}, "number-range")
	c.strings[memo] = x
	return x, 0, nil
}

// numberMemoKey is the key of a number automaton in c.strings (one per
// distinct kind, multipleOf and bounds, however many places use it; no other
// key there starts with "number\x00").
func numberMemoKey(kind string, mult, lo, hi *big.Rat, loExcl, hiExcl, integer bool) string {
	var b strings.Builder
	b.WriteString("number\x00")
	b.WriteString(kind)
	for _, r := range []*big.Rat{mult, lo, hi} {
		b.WriteByte(' ')
		if r == nil {
			b.WriteByte('-')
		} else {
			b.WriteString(r.RatString())
		}
	}
	fmt.Fprintf(&b, " %t %t %t", loExcl, hiExcl, integer)
	return b.String()
}

// multipleTrie is the automaton of the multiples N of p in [nlo, nhi] (fewer
// than maxMultipleList), from the trie of their texts with all d fraction
// digits ("-12.50" for N = -1250, d = 2; "12." when d = 0, for a number): an
// integer part may end the text when "." and d zeros follow it in the trie, a
// fraction of j digits when d-j zeros do, and zeros may follow the d-th digit.
func multipleTrie(p *big.Int, d int, nlo, nhi *big.Int, integer bool) *dfa {
	var texts []string
	pow := new(big.Int).Exp(bigTen, big.NewInt(int64(d)), nil)
	for n := new(big.Int).Set(nlo); n.Cmp(nhi) <= 0; n.Add(n, p) {
		s := ""
		mag := new(big.Int).Abs(n)
		if n.Sign() < 0 {
			s = "-"
		}
		q, r := new(big.Int).QuoRem(mag, pow, new(big.Int))
		s += q.String()
		if !integer {
			s += "."
			if d > 0 {
				f := r.String()
				s += strings.Repeat("0", d-len(f)) + f
			}
		}
		texts = append(texts, s)
	}
	t := namesDFA(texts)
	if integer {
		return t
	}
	// zeros completes the text from s with k zeros (after a "." if dot).
	zeros := func(s int32, dot bool, k int) bool {
		if dot {
			if s = t.step(s, '.'); s < 0 {
				return false
			}
		}
		for range k {
			if s = t.step(s, '0'); s < 0 {
				return false
			}
		}
		return t.states[s].accept
	}
	tail := int32(len(t.states))
	t.states = append(t.states, dstate{accept: true, edges: []dedge{{'0', '0', tail}}})
	// depth in the fraction: -1 before the "."
	frac := make([]int, len(t.states))
	for i := range frac {
		frac[i] = -1
	}
	for s := range len(t.states) - 1 { // trie states are numbered parents first
		for _, e := range t.states[s].edges {
			switch {
			case e.lo == '.':
				frac[e.to] = 0
			case frac[s] >= 0:
				frac[e.to] = frac[s] + 1
			}
		}
	}
	for s := range len(t.states) - 1 {
		st := &t.states[s]
		switch {
		case st.accept: // all d digits (or the "." when d = 0)
			st.accept = d > 0
			st.edges = append(st.edges, dedge{'0', '0', tail})
		case frac[s] > 0:
			st.accept = zeros(int32(s), false, d-frac[s])
		case frac[s] < 0 && s > 0:
			st.accept = zeros(int32(s), true, d)
		}
	}
	return t
}

// boundKeys are the bound keywords, in the order numericBounds reads them.
var boundKeys = [4]string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}

// tighterBounds picks the tighter of each pair of bounds rs (indexed as
// boundKeys; nil: absent), an exclusive one on a tie: the lower bound lo
// (exclusive or not) read from boundKeys[loK], the upper hi from boundKeys[hiK].
func tighterBounds(rs [4]*big.Rat) (lo *big.Rat, loExcl bool, loK int, hi *big.Rat, hiExcl bool, hiK int) {
	lo, loK = rs[0], 0
	if rs[1] != nil && (lo == nil || rs[1].Cmp(lo) >= 0) {
		lo, loExcl, loK = rs[1], true, 1
	}
	hi, hiK = rs[2], 2
	if rs[3] != nil && (hi == nil || rs[3].Cmp(hi) <= 0) {
		hi, hiExcl, hiK = rs[3], true, 3
	}
	return lo, loExcl, loK, hi, hiExcl, hiK
}

// rawBounds reads o's bounds (indexed as boundKeys) for judging, not
// writing: a bound that is not a number is left out (ok false).
func rawBounds(o *object) (rs [4]*big.Rat, ok bool) {
	ok = true
	for i, k := range boundKeys {
		v, has := o.get(k)
		if !has {
			continue
		}
		n, isNum := v.(json.Number)
		r, good := ratOf(n)
		if !isNum || !good {
			ok = false
			continue
		}
		rs[i] = r
	}
	return rs, ok
}
