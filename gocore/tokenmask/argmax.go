package tokenmask

import (
	"math"
	"math/bits"
)

// Argmax returns the lowest index of the highest of logits (-1 for none), and the
// index of the first NaN or +Inf among them (-1 for none; best is then meaningless).
// Four stripes keep their own running maximum, so the scan is not one chain of
// dependent compares; each keeps its first maximum, and the stripes are merged by
// value, then by index. It is greedy decoding's pick: the sampler's argmax and the
// model's, which must agree.
func Argmax(logits []float32) (best, bad int) {
	inf := float32(math.Inf(1))
	var bestL [4]float32
	var at [4]int
	for k := range bestL {
		bestL[k], at[k] = float32(math.Inf(-1)), -1
	}
	nonFinite := false
	n := len(logits)
	i := 0
	for ; i+4 <= n; i += 4 {
		l := logits[i : i+4 : i+4]
		if !(l[0] < inf && l[1] < inf && l[2] < inf && l[3] < inf) {
			nonFinite = true
		}
		if l[0] > bestL[0] || at[0] < 0 {
			bestL[0], at[0] = l[0], i
		}
		if l[1] > bestL[1] || at[1] < 0 {
			bestL[1], at[1] = l[1], i+1
		}
		if l[2] > bestL[2] || at[2] < 0 {
			bestL[2], at[2] = l[2], i+2
		}
		if l[3] > bestL[3] || at[3] < 0 {
			bestL[3], at[3] = l[3], i+3
		}
	}
	for ; i < n; i++ {
		l := logits[i]
		if !(l < inf) {
			nonFinite = true
		}
		if k := i & 3; l > bestL[k] || at[k] < 0 {
			bestL[k], at[k] = l, i
		}
	}
	if nonFinite {
		for i, l := range logits {
			if !(l < inf) {
				return -1, i
			}
		}
	}
	best = -1
	for k := range at {
		if at[k] >= 0 && (best < 0 || bestL[k] > logits[best] || (bestL[k] == logits[best] && at[k] < best)) {
			best = at[k]
		}
	}
	return best, -1
}

// ArgmaxIn returns the lowest index of the highest of the logits whose ids m holds,
// or -1 when it holds none below len(logits). It visits only the set bits (a
// grammar's mask is often sparse) and does not check the logits for NaN: see Argmax.
func ArgmaxIn(logits []float32, m Mask) int {
	best := -1
	var bestL float32
	for w, word := range m {
		for word != 0 {
			i := w*32 + bits.TrailingZeros32(word)
			word &= word - 1
			if i >= len(logits) {
				return best
			}
			if l := logits[i]; best < 0 || l > bestL {
				best, bestL = i, l
			}
		}
	}
	return best
}
