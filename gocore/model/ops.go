package model

import (
	"fmt"
	"math"
)

// RMSNorm writes dst[i] = weight[i] · x[i] / sqrt(mean(x²) + eps), Llama's RMSNorm
// (the mean is accumulated in float64). dst may be x. len(weight) == len(x) == len(dst).
func RMSNorm(dst, x, weight []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	inv := float32(1 / math.Sqrt(ss/float64(len(x))+float64(eps)))
	for i, v := range x {
		dst[i] = weight[i] * (v * inv)
	}
}

// SiLUMul writes gate[i] = silu(gate[i]) · up[i], the SwiGLU activation, where
// silu(g) = g / (1 + e^-g).
func SiLUMul(gate, up []float32) {
	up = up[:len(gate)]
	for i, g := range gate {
		gate[i] = float32(float64(g)/(1+math.Exp(-float64(g)))) * up[i]
	}
}

// GELUTanhMul writes gate[i] = gelu(gate[i]) · up[i], the GeGLU activation, with
// PyTorch's tanh approximation gelu(g) = g/2·(1 + tanh(√(2/π)·(g + 0.044715·g³)))
// (computed in float64, rounded once).
func GELUTanhMul(gate, up []float32) {
	up = up[:len(gate)]
	const k = 0.7978845608028654 // √(2/π)
	for i, g := range gate {
		x := float64(g)
		gate[i] = float32(0.5*x*(1+math.Tanh(k*(x+0.044715*x*x*x)))) * up[i]
	}
}

// RoPE holds the rotary position embedding of one model: inverse frequencies per pair
// of head dimensions, after any llama3, linear or longrope scaling. It rotates in
// Hugging Face's rotate_half convention: dimension i pairs with i + headDim/2 (not
// interleaved pairs). headDim is the rotary dimension (Config.RotaryDim), which is less
// than the attention head's under partial rotary embeddings.
type RoPE struct {
	headDim int
	invFreq []float32 // headDim/2 entries
	// longrope: the frequencies for sequences longer than longAfter positions (nil:
	// none), and the factor cos and sin are multiplied by (1: none).
	longFreq  []float32
	longAfter int
	mscale    float32
}

// NewRoPE computes the inverse frequencies theta^(-2i/headDim) (in float32, as
// transformers does) and applies scaling (nil: none). For longrope, invFreq[i] is
// divided by short_factor[i] (sequences up to original_max_position_embeddings) or
// long_factor[i] (longer ones: see CosSinAt), and cos and sin are multiplied by the
// attention factor.
func NewRoPE(headDim int, theta float64, scaling *RopeScaling) (*RoPE, error) {
	if headDim <= 0 || headDim%2 != 0 {
		return nil, fmt.Errorf("model: rotary embeddings need a positive even head dimension, got %d", headDim)
	}
	if theta <= 0 {
		return nil, fmt.Errorf("model: rope_theta must be positive, got %g", theta)
	}
	half := headDim / 2
	inv := make([]float32, half)
	for i := range inv {
		e := float32(2*i) / float32(headDim)
		inv[i] = 1 / powTheta(theta, e)
	}
	r := &RoPE{headDim: headDim, invFreq: inv, mscale: 1}
	if scaling != nil {
		switch scaling.Type {
		case "longrope":
			if len(scaling.ShortFactor) != half || len(scaling.LongFactor) != half {
				return nil, fmt.Errorf("model: longrope needs %d short and long factors, got %d and %d", half, len(scaling.ShortFactor), len(scaling.LongFactor))
			}
			r.longFreq = make([]float32, half)
			for i := range inv {
				// transformers: 1 / (ext_factors * base**(2i/dim)), in float32
				pw := powTheta(theta, float32(2*i)/float32(headDim))
				inv[i] = 1 / (float32(scaling.ShortFactor[i]) * pw)
				r.longFreq[i] = 1 / (float32(scaling.LongFactor[i]) * pw)
			}
			r.longAfter = scaling.OriginalMaxPositions
			if scaling.AttentionFactor > 0 {
				r.mscale = float32(scaling.AttentionFactor)
			}
		case "linear":
			for i := range inv {
				inv[i] = float32(float64(inv[i]) / scaling.Factor)
			}
		case "llama3":
			old := float64(scaling.OriginalMaxPositions)
			lowWave := old / scaling.LowFreqFactor
			highWave := old / scaling.HighFreqFactor
			for i, f := range inv {
				fr := float64(f)
				wave := 2 * math.Pi / fr
				switch {
				case wave < highWave: // high frequency: unchanged
				case wave > lowWave: // low frequency: divided by factor
					inv[i] = float32(fr / scaling.Factor)
				default: // in between: interpolate
					smooth := (old/wave - scaling.LowFreqFactor) / (scaling.HighFreqFactor - scaling.LowFreqFactor)
					inv[i] = float32((1-smooth)*fr/scaling.Factor + smooth*fr)
				}
			}
		default:
			return nil, fmt.Errorf("model: rope scaling type %q is not supported", scaling.Type)
		}
	}
	return r, nil
}

// HeadDim returns the head dimension the embedding rotates.
func (r *RoPE) HeadDim() int { return r.headDim }

// InvFreq returns a copy of the inverse frequencies (headDim/2 entries).
func (r *RoPE) InvFreq() []float32 { return append([]float32(nil), r.invFreq...) }

// powTheta is theta^e rounded to float32.
func powTheta(theta float64, e float32) float32 { return float32(math.Pow(theta, float64(e))) }

// CosSin fills cos and sin (headDim/2 entries each) for position pos: the angle of
// pair i is pos·invFreq[i], rounded to float32 before cos and sin as in transformers.
// For longrope it is CosSinAt(pos, pos+1, ...).
func (r *RoPE) CosSin(pos int, cos, sin []float32) { r.CosSinAt(pos, pos+1, cos, sin) }

// CosSinAt is CosSin for a position of a forward call whose sequence (cached and new
// positions) has seqLen positions: longrope uses its long factors when seqLen exceeds
// original_max_position_embeddings, as transformers' dynamic update does per call
// (positions already in the KV cache keep the rotation they got). Other scalings
// ignore seqLen.
func (r *RoPE) CosSinAt(pos, seqLen int, cos, sin []float32) {
	freq := r.invFreq
	if r.longFreq != nil && seqLen > r.longAfter {
		freq = r.longFreq
	}
	for i, f := range freq {
		a := float64(float32(pos) * f)
		cos[i] = float32(math.Cos(a))
		sin[i] = float32(math.Sin(a))
		if r.mscale != 1 {
			cos[i] *= r.mscale
			sin[i] *= r.mscale
		}
	}
}

// Rotate rotates every head of x (a whole number of heads of headDim values, laid out
// head after head) by the angles whose cosines and sines CosSin gave:
// x'[i] = x[i]·cos[i] − x[i+h]·sin[i] and x'[i+h] = x[i+h]·cos[i] + x[i]·sin[i], h = headDim/2.
func (r *RoPE) Rotate(x, cos, sin []float32) { rotateHeads(x, r.headDim, cos, sin) }

// rotateHeadsPartial rotates the first rotaryDim values of every head of headDim values
// (cos and sin hold rotaryDim/2 entries) and leaves the rest.
func rotateHeadsPartial(x []float32, headDim, rotaryDim int, cos, sin []float32) {
	if rotaryDim == headDim {
		rotateHeads(x, headDim, cos, sin)
		return
	}
	for base := 0; base+headDim <= len(x); base += headDim {
		rotateHeads(x[base:base+rotaryDim], rotaryDim, cos, sin)
	}
}

// rotateHeads is Rotate for heads of headDim values.
func rotateHeads(x []float32, headDim int, cos, sin []float32) {
	half := headDim / 2
	cos, sin = cos[:half], sin[:half]
	for base := 0; base+headDim <= len(x); base += headDim {
		a := x[base : base+half]
		b := x[base+half : base+headDim]
		for i := range a {
			x0, x1 := a[i], b[i]
			a[i] = x0*cos[i] - x1*sin[i]
			b[i] = x1*cos[i] + x0*sin[i]
		}
	}
}

// Apply rotates every head of x for position pos (CosSin then Rotate).
func (r *RoPE) Apply(x []float32, pos int) {
	half := r.headDim / 2
	cs := make([]float32, 2*half)
	r.CosSin(pos, cs[:half], cs[half:])
	r.Rotate(x, cs[:half], cs[half:])
}

func expGo(x []float32) {
	for i, v := range x {
		x[i] = float32(math.Exp(float64(v)))
	}
}

func axpyGo(dst, x []float32, a float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] += a * v
	}
}

func scoresGo(out, q, k []float32, stride int) {
	hd := len(q)
	for p := range out {
		out[p] = dotGo(q, k[p*stride:p*stride+hd])
	}
}

func weightedSumGo(out, s, v []float32, stride int) {
	clear(out)
	for p, w := range s {
		axpyGo(out, v[p*stride:p*stride+len(out)], w)
	}
}

func expSumGo(x []float32, shift float32) float32 {
	var sum float32
	for i, v := range x {
		e := float32(math.Exp(float64(v - shift)))
		x[i] = e
		sum += e
	}
	return sum
}
