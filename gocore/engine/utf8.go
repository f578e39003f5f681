package engine

// partial is the state of a UTF-8 character that has started but not finished: the
// bits decoded so far, how many continuation bytes remain, and the character's full
// length (which fixes the smallest code point it may encode, so overlong forms never
// match). The zero value means "between characters".
//
//	bits 0-20: value so far   bits 21-22: bytes remaining   bits 24-26: length
//	bit 27: free
//
// A free state is one whose every completion is a valid code point of the class on
// top of its stack: the value no longer matters, so it is dropped (set to 0) and all
// free states of one length and remainder are the same state. Without this a class
// like [^\n] would give every distinct prefix of a multi-byte character its own
// configuration, and a walk of the token trie would build thousands of them.
type partial uint32

const freeBit partial = 1 << 27

func (p partial) free() bool { return p&freeBit != 0 }

// freeFor returns p as a free state if every completion of p is a valid code point
// in c, and p itself otherwise.
func (p partial) freeFor(c *class) partial {
	if p.free() {
		return p
	}
	lo, hi, min := p.bounds()
	if lo < min || hi > 0x10FFFF || (lo <= 0xDFFF && hi >= 0xD800) || !c.covers(lo, hi) {
		return p
	}
	return mkPartial(0, p.remain(), p.length()) | freeBit
}

func (p partial) value() rune  { return rune(p & 0x1FFFFF) }
func (p partial) remain() uint { return uint(p>>21) & 3 }
func (p partial) length() uint { return uint(p>>24) & 7 }

func mkPartial(v rune, remain, length uint) partial {
	return partial(uint32(v)&0x1FFFFF | uint32(remain)<<21 | uint32(length)<<24)
}

// utf8Start decodes a lead byte of a multi-byte character.
func utf8Start(b byte) (partial, bool) {
	switch {
	case b >= 0xC2 && b <= 0xDF:
		return mkPartial(rune(b&0x1F), 1, 2), true
	case b >= 0xE0 && b <= 0xEF:
		return mkPartial(rune(b&0x0F), 2, 3), true
	case b >= 0xF0 && b <= 0xF4:
		return mkPartial(rune(b&0x07), 3, 4), true
	}
	return 0, false
}

// next adds a continuation byte. done says the character is complete (cp is it);
// otherwise the new partial state is returned. ok is false for a byte that is not a
// continuation byte.
//
// For a free state, cp is meaningless (the caller must not check it) and np stays
// free.
func (p partial) next(b byte) (np partial, cp rune, done, ok bool) {
	if b&0xC0 != 0x80 {
		return 0, 0, false, false
	}
	if p.free() {
		r := p.remain() - 1
		if r == 0 {
			return 0, 0, true, true
		}
		return mkPartial(0, r, p.length()) | freeBit, 0, false, true
	}
	v := p.value()<<6 | rune(b&0x3F)
	r := p.remain() - 1
	if r == 0 {
		return 0, v, true, true
	}
	return mkPartial(v, r, p.length()), 0, false, true
}

// bounds returns the code points [lo, hi] the bits so far and the bytes remaining
// allow, and the smallest code point the character's length may encode.
func (p partial) bounds() (lo, hi, min rune) {
	sh := 6 * p.remain()
	lo = p.value() << sh
	hi = lo | (1<<sh - 1)
	switch p.length() {
	case 2:
		min = 0x80
	case 3:
		min = 0x800
	default:
		min = 0x10000
	}
	return lo, hi, min
}

// span is the range of code points the partial character may still become,
// limited to what its length can validly encode.
func (p partial) span() (lo, hi rune) {
	lo, hi, min := p.bounds()
	if lo < min {
		lo = min
	}
	if hi > 0x10FFFF {
		hi = 0x10FFFF
	}
	return lo, hi
}

// validFor reports whether cp is a valid (shortest-form, non-surrogate) code point for
// a character of the given byte length.
func validFor(cp rune, length uint) bool {
	switch length {
	case 2:
		return cp >= 0x80
	case 3:
		return cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)
	default:
		return cp >= 0x10000 && cp <= 0x10FFFF
	}
}

// overlapsValid reports whether a valid code point in [lo, hi] (surrogates excluded)
// is in class c.
func overlapsValid(c *class, lo, hi rune) bool {
	if lo > hi {
		return false
	}
	if hi < 0xD800 || lo > 0xDFFF {
		return c.overlaps(lo, hi)
	}
	return c.overlaps(lo, min(hi, 0xD7FF)) || c.overlaps(max(lo, 0xE000), hi)
}
