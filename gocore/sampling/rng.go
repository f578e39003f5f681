package sampling

import (
	"crypto/rand"
	"encoding/binary"
	"math"
)

// DefaultSeed is llama.cpp's LLAMA_DEFAULT_SEED: a sampler given this seed draws a fresh
// random seed when it is created or reset (see the samplers' Seed methods for the seed
// actually in use). Any other value gives the same draws on every run and platform.
const DefaultSeed uint32 = 0xFFFFFFFF

// resolveSeed is llama.cpp's get_rng_seed: DefaultSeed means "pick one at random".
func resolveSeed(seed uint32) uint32 {
	if seed != DefaultSeed {
		return seed
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0x5eed5eed // crypto/rand does not fail on supported platforms
	}
	return binary.LittleEndian.Uint32(b[:])
}

const (
	mtN = 624
	mtM = 397
)

// MT19937 is the 32-bit Mersenne Twister, bit-exact with C++'s std::mt19937, which
// llama.cpp's dist, XTC and mirostat samplers use. Float draws follow libstdc++'s
// generate_canonical, so with the same seed and the same probabilities tether picks the
// same tokens as a llama.cpp built with GCC. The zero value is not seeded: use NewMT19937
// or Seed.
type MT19937 struct {
	state [mtN]uint32
	index int
}

// NewMT19937 returns a generator seeded like std::mt19937(seed).
func NewMT19937(seed uint32) *MT19937 {
	m := &MT19937{}
	m.Seed(seed)
	return m
}

// Seed re-seeds the generator like std::mt19937::seed(seed).
func (m *MT19937) Seed(seed uint32) {
	m.state[0] = seed
	for i := 1; i < mtN; i++ {
		prev := m.state[i-1]
		m.state[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	m.index = mtN
}

func (m *MT19937) twist() {
	for i := 0; i < mtN; i++ {
		y := (m.state[i] & 0x80000000) | (m.state[(i+1)%mtN] & 0x7fffffff)
		v := m.state[(i+mtM)%mtN] ^ (y >> 1)
		if y&1 != 0 {
			v ^= 0x9908b0df
		}
		m.state[i] = v
	}
	m.index = 0
}

// Uint32 returns the next 32-bit output (operator() of std::mt19937).
func (m *MT19937) Uint32() uint32 {
	if m.index >= mtN {
		m.twist()
	}
	y := m.state[m.index]
	m.index++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// Float32 returns a value in [0, 1) like libstdc++'s
// std::uniform_real_distribution<float>(0, 1): one 32-bit draw, converted to float and
// divided by 2^32 in float arithmetic (a result that rounds up to 1 becomes the largest
// float below 1).
func (m *MT19937) Float32() float32 {
	r := float32(m.Uint32()) / 4294967296.0
	if r >= 1 {
		r = math.Nextafter32(1, 0)
	}
	return r
}

// Float64 returns a value in [0, 1) like libstdc++'s
// std::uniform_real_distribution<double>(0, 1): two 32-bit draws, the second the high
// word, combined and divided by 2^64 in double arithmetic.
func (m *MT19937) Float64() float64 {
	lo := float64(m.Uint32())
	hi := float64(m.Uint32())
	r := (lo + hi*4294967296.0) / 18446744073709551616.0
	if r >= 1 {
		r = math.Nextafter(1, 0)
	}
	return r
}
