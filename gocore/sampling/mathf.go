package sampling

import "math"

// expf is a float32 exponential that gives the same bits on every platform: range
// reduction and a degree-11 polynomial in float64 (relative error < 1e-14, far below
// float32's half ulp, so results are float32's correctly rounded exp except in rare
// ties), with explicit float64 conversions so that no compiler fuses a multiply and an
// add (Go may fuse them on arm64, ppc64 and s390x).
func expf(x float32) float32 {
	switch {
	case x != x:
		return x
	case x > 88.72284:
		return float32(math.Inf(1))
	case x < -104:
		return 0
	}
	return float32(expPoly(float64(x)))
}

// expd is a portable float64 exponential (same method as expf; relative error < 1e-14),
// used where llama.cpp computes exp in double. Results below 2^-1022 flush to 0.
func expd(x float64) float64 {
	switch {
	case x != x:
		return x
	case x > 709 || x < -708:
		return math.Exp(x) // only overflow, underflow and denormals get here
	}
	return expPoly(x)
}

// expPoly computes exp(x) for x in [-708, 709].
func expPoly(xd float64) float64 {
	const (
		log2e = 1.4426950408889634
		ln2hi = 6.93147180369123816490e-01
		ln2lo = 1.90821492927058770002e-10
	)
	k := math.Floor(float64(xd*log2e) + 0.5)
	r := float64(xd-float64(k*ln2hi)) - float64(k*ln2lo) // |r| <= ln2/2
	// exp(r) ~ sum r^n/n! for n <= 11 (truncation error < 1e-14), Horner with no fusion.
	p := 1.0 / 39916800
	p = float64(p*r) + 1.0/3628800
	p = float64(p*r) + 1.0/362880
	p = float64(p*r) + 1.0/40320
	p = float64(p*r) + 1.0/5040
	p = float64(p*r) + 1.0/720
	p = float64(p*r) + 1.0/120
	p = float64(p*r) + 1.0/24
	p = float64(p*r) + 1.0/6
	p = float64(p*r) + 0.5
	p = float64(p*r) + 1
	p = float64(p*r) + 1
	// 2^k as a float64 built from its bits (k is in [-1022, 1023], inside the normal range).
	return p * math.Float64frombits(uint64(int64(k)+1023)<<52)
}

// logf is log for float32 values (llama.cpp's logf), rounded to float32.
func logf(x float32) float32 { return float32(math.Log(float64(x))) }

// log2f is log2 for float32 values.
func log2f(x float32) float32 { return float32(math.Log2(float64(x))) }

// powf is pow for float32 values.
func powf(x, y float32) float32 { return float32(math.Pow(float64(x), float64(y))) }

var negInf = float32(math.Inf(-1))
