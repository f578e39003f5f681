// Package tokenmask is the set of token ids every tether mask is: a bitset whose
// word layout is the one transformers, vLLM, xgrammar and llguidance callers pass
// as int32 bitmask rows, so a mask goes to a caller's buffer without conversion.
package tokenmask

import (
	"math/bits"
	"unsafe"
)

// Mask is a set of token ids kept as a bitset: token i is in the set when
// bit i%32 (least significant first) of word i/32 is set. It is the layout of
// every mask tether fills (Matcher.FillMask, the processors, the Python bitmask
// API, which is the int32 layout of xgrammar and llguidance), so a mask can be
// handed to a caller's buffer without conversion.
//
// Mask is a named slice type: a []uint32 of the right length is a Mask,
// and the methods never allocate. Ids outside the mask (negative, or at or past
// len(m)*32) are not in the set; Set and Unset ignore them.
type Mask []uint32

// Words is the number of 32-bit words a mask over size token ids needs.
func Words(size int) int { return (size + 31) / 32 }

// New returns an empty mask for token ids 0..size-1.
func New(size int) Mask { return make(Mask, Words(size)) }

// Has reports whether token id is in the mask.
func (m Mask) Has(id int) bool {
	w := id >> 5
	return id >= 0 && w < len(m) && m[w]&(1<<(uint(id)&31)) != 0
}

// Set adds token id to the mask.
func (m Mask) Set(id int) {
	if w := id >> 5; id >= 0 && w < len(m) {
		m[w] |= 1 << (uint(id) & 31)
	}
}

// Unset removes token id from the mask.
func (m Mask) Unset(id int) {
	if w := id >> 5; id >= 0 && w < len(m) {
		m[w] &^= 1 << (uint(id) & 31)
	}
}

// Count returns the number of ids in the mask (64 bits per popcount).
func (m Mask) Count() int {
	n, i := 0, 0
	for ; i+1 < len(m); i += 2 {
		n += bits.OnesCount64(uint64(m[i]) | uint64(m[i+1])<<32)
	}
	if i < len(m) {
		n += bits.OnesCount32(m[i])
	}
	return n
}

// Any reports whether the mask holds at least one id.
func (m Mask) Any() bool {
	for _, w := range m {
		if w != 0 {
			return true
		}
	}
	return false
}

// Or adds every id of src to m (over the words both have).
func (m Mask) Or(src Mask) {
	n := min(len(m), len(src))
	dst, src := m[:n], src[:n]
	if h := n / 2; h > 0 && uintptr(unsafe.Pointer(&dst[0]))%8 == 0 && uintptr(unsafe.Pointer(&src[0]))%8 == 0 {
		// Two words at a time, four pairs an iteration: a mask is 4k words
		// (Llama-3), and a mask that takes a cached set of tokens ORs one in,
		// which word by word cost half its time. (Both start 8-byte aligned,
		// as Go and numpy allocate them; a row of odd index in an int32 matrix
		// may not, and goes word by word.)
		d := unsafe.Slice((*uint64)(unsafe.Pointer(&dst[0])), h)
		s := unsafe.Slice((*uint64)(unsafe.Pointer(&src[0])), h)
		i := 0
		for ; i+4 <= h; i += 4 {
			dd, ss := d[i:i+4:i+4], s[i:i+4:i+4]
			dd[0] |= ss[0]
			dd[1] |= ss[1]
			dd[2] |= ss[2]
			dd[3] |= ss[3]
		}
		for ; i < h; i++ {
			d[i] |= s[i]
		}
		dst, src = dst[2*h:], src[2*h:]
	}
	for i := range dst {
		dst[i] |= src[i]
	}
}

// Reset removes every id.
func (m Mask) Reset() { clear(m) }

// Fill adds every id below limit (limit is clamped to the mask's size).
func (m Mask) Fill(limit int) {
	limit = min(max(limit, 0), len(m)*32)
	full := limit / 32
	for i := 0; i < full; i++ {
		m[i] = ^uint32(0)
	}
	if r := limit % 32; r != 0 {
		m[full] |= 1<<uint(r) - 1
	}
}

// ClearFrom removes every id at or above limit.
func (m Mask) ClearFrom(limit int) {
	limit = max(limit, 0)
	w := limit / 32
	if w >= len(m) {
		return
	}
	if r := limit % 32; r != 0 {
		m[w] &= 1<<uint(r) - 1
		w++
	}
	clear(m[w:])
}

// IDs appends the ids in the mask to dst in increasing order and returns it.
func (m Mask) IDs(dst []int32) []int32 {
	for w, x := range m {
		for x != 0 {
			b := bits.TrailingZeros32(x)
			dst = append(dst, int32(w*32+b))
			x &= x - 1
		}
	}
	return dst
}
