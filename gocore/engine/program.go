package engine

import (
	"math/bits"
	"sort"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// The compiled program: flat elements (one instruction each, every alternative
// closed by opEnd) and character classes.

// op is what one program element does.
type op uint8

const (
	opChar   op = iota // match one code point of classes[arg]
	opRef              // call rule arg
	opToken            // match token id arg (neg: any token but arg)
	opEnd              // end of an alternative
	opRepeat           // call rule arg between lo and hi times (a counter, see arena.expandRep)
	opByte             // match one raw byte of byteSets[arg], between characters (byteelems.go)
)

// elem is one instruction of the flat program. Every alternative of every rule is a
// run of elems closed by an opEnd, so "the element after this one" is always idx+1.
type elem struct {
	op     op
	neg    bool
	arg    int32
	lo, hi int32 // opRepeat: the fewest and most times
}

// class is a compiled character class.
type class struct {
	ranges []gbnf.Range // sorted, merged (adjacent ranges joined)
	neg    bool
	ascii  [4]uint32 // membership of code points < 128, negation applied
	wide   bool      // holds every valid code point >= 0x80
	narrow bool      // holds no code point >= 0x80
	// For the multi-byte byte kinds (byteKind): whether it holds every (all) or
	// no (none) valid code point >= 0x80 outside U+2000-U+2FFF (kind 127), and
	// every or none of U+2000-U+2FFF (kindE2).
	hiAll, hiNone, e2All, e2None bool
	kinds                        [2]uint64 // the byte kinds (see byteKind) it takes a byte of
	first                        byteSet   // the bytes that can start one of its characters
}

func (c *class) has(cp rune) bool {
	if cp < 128 && cp >= 0 {
		return c.ascii[cp>>5]&(1<<(uint(cp)&31)) != 0
	}
	rs := c.ranges
	i := sort.Search(len(rs), func(i int) bool { return rs[i].Hi >= cp })
	in := i < len(rs) && rs[i].Lo <= cp
	return in != c.neg
}

// oneByte returns the code point of a class that holds exactly one, an ASCII
// one.
func (c *class) oneByte() (byte, bool) {
	if !c.narrow {
		return 0, false
	}
	n, x := 0, 0
	for w, bs := range c.ascii {
		if bs != 0 {
			n += bits.OnesCount32(bs)
			x = w*32 + bits.TrailingZeros32(bs)
		}
	}
	return byte(x), n == 1
}

// overlaps reports whether some code point in [lo, hi] is in the class.
func (c *class) overlaps(lo, hi rune) bool {
	if lo > hi {
		return false
	}
	rs := c.ranges
	i := sort.Search(len(rs), func(i int) bool { return rs[i].Hi >= lo })
	if !c.neg {
		return i < len(rs) && rs[i].Lo <= hi
	}
	// Negated: some point of [lo, hi] lies outside every range. Ranges are merged, so
	// [lo, hi] is fully covered only if a single range covers it.
	return !(i < len(rs) && rs[i].Lo <= lo && rs[i].Hi >= hi)
}

// covers reports whether every code point in [lo, hi] is in the class.
func (c *class) covers(lo, hi rune) bool {
	if lo > hi {
		return true
	}
	if hi < 128 {
		for cp := lo; cp <= hi; cp++ {
			if !c.has(cp) {
				return false
			}
		}
		return true
	}
	if lo < 128 {
		return c.covers(lo, 127) && c.covers(128, hi)
	}
	rs := c.ranges
	i := sort.Search(len(rs), func(i int) bool { return rs[i].Hi >= lo })
	if !c.neg {
		// Ranges are merged, so one range must hold all of [lo, hi].
		return i < len(rs) && rs[i].Lo <= lo && rs[i].Hi >= hi
	}
	return !(i < len(rs) && rs[i].Lo <= hi)
}

func newClass(rs []gbnf.Range, neg bool) class {
	merged := gbnf.NormalizeRanges(rs)
	c := class{ranges: merged, neg: neg}
	for _, r := range merged { // the ranges' ASCII part, bit by bit (ranges are few below 128)
		for ch := max(r.Lo, 0); ch <= min(r.Hi, 127); ch++ {
			c.ascii[ch>>5] |= 1 << (uint(ch) & 31)
		}
	}
	if neg {
		for i := range c.ascii {
			c.ascii[i] = ^c.ascii[i]
		}
	}
	// After ascii, which has reads.
	c.wide = c.covers(0x80, 0xD7FF) && c.covers(0xE000, 0x10FFFF)
	c.narrow = !overlapsValid(&c, 0x80, 0x10FFFF)
	// The ASCII kinds are the bytes themselves (byteKind), but for 0x01 and
	// DEL, kind 0 with NUL: the class's bits, moved there.
	c.kinds[0] = uint64(c.ascii[0]) | uint64(c.ascii[1])<<32
	c.kinds[1] = uint64(c.ascii[2]) | uint64(c.ascii[3])<<32
	c.kinds[0] &^= 1 << 1  // 0x01: kind 0 (kind 1 is kindE2)
	c.kinds[1] &^= 1 << 63 // DEL: kind 0 (kind 127 is the multi-byte kind)
	if c.ascii[0]&(1<<1) != 0 || c.ascii[3]>>31 != 0 {
		c.kinds[0] |= 1
	}
	c.hiAll = c.covers(0x80, e2Lo-1) && c.covers(e2Hi+1, 0xD7FF) && c.covers(0xE000, 0x10FFFF)
	c.hiNone = !overlapsValid(&c, 0x80, e2Lo-1) && !overlapsValid(&c, e2Hi+1, 0x10FFFF)
	c.e2All = c.covers(e2Lo, e2Hi)
	c.e2None = !c.overlaps(e2Lo, e2Hi)
	if !c.hiNone {
		c.kinds[1] |= 1 << 63
	}
	if !c.e2None {
		c.kinds[0] |= 1 << kindE2
	}
	return c
}
