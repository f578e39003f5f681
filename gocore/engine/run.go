package engine

import "math/bits"

// Run analysis: whether a trie subtree whose bytes all take a configuration along
// one run (a loop like [^"]*, a counter, a chain of nested rules) can be settled
// without walking it (see walker.walkTrie).

// loopBits records, per kind of byte (as in trie.below), whether the byte is known
// to take a configuration to its run target (yes) or known not to (no). The target
// is the configuration the first kind asked about leads to.
type loopBits struct {
	target  int32 // 0: not set yet
	yes, no [2]uint64
	// Runs measured from this configuration: for the byte kinds runNeed, it
	// stays alive for runLen characters (maxRun: for good).
	runNeed [2]uint64
	runLen  int32
	// runCap: texts of capNeed's kinds (or fewer) stay inside the frame from
	// here for at most this many characters (see runLength); 0: not known.
	runCap  int32
	capNeed [2]uint64 // runCap holds for runs over these byte kinds (or fewer)
	// capFull: every byte of capNeed's kinds keeps the last character of the run
	// alive, so texts of exactly runCap characters stay alive (to the frame's end).
	capFull bool
	// after: per stack with a character on top, the byte kinds its class takes
	// and those the classes on top after it take (see lastChar); nil: not known.
	after []kindsAfter
	// narrow: see narrowCfg (0: not known, 1: narrow, 2: not).
	narrow uint8
	// afterChar: see afterFreeChar (when afterKnown).
	afterChar  int32
	afterKnown bool
}

// loopOf returns the run memo of configuration c. Only analysis arenas ask, so
// matchers' arenas never hold these; the pointer is good until the next step.
func (a *arena) loopOf(c int32) *loopBits {
	if int(c) >= len(a.loop) {
		a.loop = append(a.loop, make([]loopBits, len(a.cfgs)-len(a.loop))...)
	}
	return &a.loop[c]
}

type kindsAfter struct{ takes, then [2]uint64 }

// maxRun caps the run lengths runLength measures (at least the trie's height cap).
const maxRun = 256

// runLength measures the run from configuration c (one without nodeExit entries,
// between characters) over the byte kinds in need, up to h characters: n is how
// many characters of those kinds every valid UTF-8 text may have and stay alive
// inside the frame, whatever the frame's exits, because each kind takes each
// configuration on the way to one same configuration (n = h: at least h). A run
// that comes back to a configuration it left (a loop, like `[^"]*`) lasts for
// good; counted repetitions unrolled into nested rules (`[^"]{0,40}`) end after
// their count. capAt, when not 0, bounds every text of those kinds from c: past
// capAt characters no stack inside the frame can take another (lastChar); with
// capFull, texts of exactly capAt ASCII characters are all alive. Answers are memoized
// per configuration and byte kind.
func (a *arena) runLength(c int32, need [2]uint64, h int) (n, capAt int, capFull bool) {
	lb := a.loopOf(c)
	if need[0]&^lb.capNeed[0] == 0 && need[1]&^lb.capNeed[1] == 0 {
		capAt, capFull = int(lb.runCap), lb.capFull
	}
	if lb.runLen > 0 && need[0]&^lb.runNeed[0] == 0 && need[1]&^lb.runNeed[1] == 0 &&
		(int(lb.runLen) >= h || (capAt > 0 && int(lb.runLen)+1 >= capAt)) {
		return min(int(lb.runLen), h), capAt, capFull
	}
	m := int32(0)
	for cur := c; int(m) < h; {
		nx := a.kindsTo(cur, need)
		if nx == cfgDead {
			if capAt == 0 && a.lastChar(cur, need) {
				capAt, capFull = int(m)+1, a.takesAll(cur, need)
				lb := a.loopOf(c)
				lb.runCap, lb.capNeed, lb.capFull = int32(capAt), need, capFull
			}
			break
		}
		m++
		if nx == cur || nx == c {
			m = maxRun
			break
		}
		cur = nx
	}
	// Every kind of runNeed and of need takes each configuration of the run to
	// its one target, for as long as both runs last: keep the union.
	lb = a.loopOf(c)
	switch {
	case lb.runLen > 0 && m >= lb.runLen:
		lb.runNeed[0] |= need[0]
		lb.runNeed[1] |= need[1]
	case m > lb.runLen:
		lb.runNeed, lb.runLen = need, m
	}
	return min(int(m), h), capAt, capFull
}

// firstBytes returns the bytes some stack of configuration c can take (all bytes
// if a stack is inside a character).
func (a *arena) firstBytes(c int32) byteSet {
	var f byteSet
	for _, e := range a.cfgs[c].entries {
		n := e.node()
		if n <= nodeExit {
			continue
		}
		if e.partial() != 0 {
			return allBytes
		}
		if el := a.g.elems[a.nodes[n].elem]; el.op == opChar {
			f.union(&a.g.classes[el.arg].first)
		} else if el.op == opByte {
			f.union(&a.g.byteSets[el.arg].bits)
		}
	}
	return f
}

// takesAll reports whether every character of the byte kinds in need keeps
// configuration c alive (inside the frame or at its end). For a multi-byte kind
// (127, kindE2) a stack must take every character of the kind, and every class on
// top must take all or none of them.
func (a *arena) takesAll(c int32, need [2]uint64) bool {
	if need[1]>>63 != 0 && !a.takesAllHigh(c, 127) {
		return false
	}
	if need[0]&(1<<kindE2) != 0 && !a.takesAllHigh(c, kindE2) {
		return false
	}
	for w := range 2 {
		for m := need[w]; m != 0; m &= m - 1 {
			k := w*64 + bits.TrailingZeros64(m)
			if k == 127 || k == kindE2 {
				continue
			}
			if k == 0 {
				for _, b := range kind0Bytes {
					if a.step(c, b) == cfgDead {
						return false
					}
				}
				continue
			}
			if a.step(c, byte(k)) == cfgDead {
				return false
			}
		}
	}
	return true
}

// kind0Bytes are the bytes of byte kind 0 (see byteKind).
var kind0Bytes = [...]byte{0, 1, 0x7F}

// takesAllHigh is takesAll for one multi-byte kind k (127 or kindE2).
func (a *arena) takesAllHigh(c int32, k uint) bool {
	some := false
	for _, e := range a.cfgs[c].entries {
		n := e.node()
		if n <= nodeExit {
			continue
		}
		if e.partial() != 0 {
			return false
		}
		if el := a.g.elems[a.nodes[n].elem]; el.op == opChar {
			all, none := a.g.classes[el.arg].holdsHigh(k)
			if !all && !none {
				return false
			}
			some = some || all
		} else if a.g.rawHigh(el) {
			return false // takes bytes of characters (byteelems.go)
		}
	}
	return some
}

// holdsHigh reports whether the class holds all, or none, of the characters of
// multi-byte byte kind k (127 or kindE2).
func (c *class) holdsHigh(k uint) (all, none bool) {
	if k == kindE2 {
		return c.e2All, c.e2None
	}
	return c.hiAll, c.hiNone
}

// lastChar reports whether no stack of configuration c (between characters) can
// take two more characters of the byte kinds in need: whatever such character it
// takes, no stack then has on top a character class holding one of those kinds.
// What follows a character does not depend on which character it was, so this is
// worked out once per stack.
func (a *arena) lastChar(c int32, need [2]uint64) bool {
	if lb := a.loopOf(c); lb.after == nil {
		after := a.computeAfter(c)
		a.loopOf(c).after = after
	}
	for _, ka := range a.loopOf(c).after {
		if ka.takes[0]&need[0] != 0 || ka.takes[1]&need[1] != 0 {
			if ka.then[0]&need[0] != 0 || ka.then[1]&need[1] != 0 {
				return false
			}
		}
	}
	return true
}

// computeAfter works out loopBits.after for configuration c.
func (a *arena) computeAfter(c int32) []kindsAfter {
	all := [2]uint64{^uint64(0), ^uint64(0)}
	out := []kindsAfter{}
	for _, e := range a.cfgs[c].entries {
		n := e.node()
		if n <= nodeExit {
			continue
		}
		el := a.g.elems[a.nodes[n].elem]
		if el.op != opChar && el.op != opByte {
			continue
		}
		ka := kindsAfter{takes: a.g.kindsOf(el)}
		if e.partial() != 0 {
			ka.takes, ka.then = all, all // inside a character: not a run
			out = append(out, ka)
			continue
		}
		a.out = a.out[:0]
		a.beginClosure()
		a.advance(n)
		if a.err != nil {
			a.err = nil
			ka.then = all
		}
		for _, x := range a.out {
			if m := x.node(); m > nodeExit {
				k := a.g.kindsOf(a.g.elems[a.nodes[m].elem])
				ka.then[0] |= k[0]
				ka.then[1] |= k[1]
			}
		}
		out = append(out, ka)
	}
	return out
}

// sameKinds returns the byte kinds taken by exactly the stacks of configuration c
// that take ASCII kind k (1..126), which step c alike; just k for other kinds or
// for configurations of more than 64 stacks.
func (a *arena) sameKinds(c int32, k uint) [2]uint64 {
	one := [2]uint64{}
	one[k>>6] = 1 << (k & 63)
	if k == 0 || k == kindE2 || k >= 127 {
		return one
	}
	sig, ok := a.asciiSig(c, byte(k))
	if !ok {
		return one
	}
	// A byte is in the group if every class of sig takes it and no other does.
	in := [4]uint32{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}
	for i, e := range a.cfgs[c].entries {
		n := e.node()
		if n <= nodeExit || e.partial() != 0 {
			continue
		}
		cl := a.g.asciiOf(a.g.elems[a.nodes[n].elem])
		if cl == nil {
			continue
		}
		for w := range in {
			if sig&(1<<uint(i)) != 0 {
				in[w] &= cl[w]
			} else {
				in[w] &^= cl[w]
			}
		}
	}
	var same [2]uint64
	same[0] = uint64(in[0]) | uint64(in[1])<<32
	same[1] = (uint64(in[2]) | uint64(in[3])<<32) &^ (1 << 63) // not DEL
	same[0] &^= 1 | 1<<kindE2                                  // not NUL, not 0x01
	return same
}

// kindsTo returns the configuration (without exits) every byte kind in need takes
// c to, or cfgDead if they do not all take it to one live configuration.
func (a *arena) kindsTo(c int32, need [2]uint64) int32 {
	lb := a.loopOf(c)
	m0, m1 := need[0]&^lb.yes[0], need[1]&^lb.yes[1]
	if m0&lb.no[0] != 0 || m1&lb.no[1] != 0 {
		return cfgDead
	}
	for m0|m1 != 0 {
		var k uint
		if m0 != 0 {
			k = uint(bits.TrailingZeros64(m0))
			m0 &= m0 - 1
		} else {
			k = 64 + uint(bits.TrailingZeros64(m1))
			m1 &= m1 - 1
		}
		nx := a.kindTo(c, k)
		// The bytes the same stacks take go where k goes.
		same := a.sameKinds(c, k)
		lb = a.loopOf(c) // stepping may have moved a.loop
		if lb.target == 0 && nx != cfgDead {
			lb.target = nx
		}
		switch {
		case nx != cfgDead && nx == lb.target:
			lb.yes[0] |= same[0]
			lb.yes[1] |= same[1]
		case nx != cfgDead && kindCount(same) > kindCount(lb.yes):
			// More bytes lead here than to the target so far: the run
			// follows these (a string body's letters, where the first kind
			// asked, a backslash, set the target to an escape's
			// configuration). The kinds known to lead to the old target do
			// not lead to the new one, and this call's need holds both; the
			// kinds known not to lead to the old one are asked again.
			lb.target, lb.no, lb.yes = nx, lb.yes, same
			return cfgDead
		default:
			lb.no[0] |= same[0]
			lb.no[1] |= same[1]
			return cfgDead
		}
		m0 &^= same[0]
		m1 &^= same[1]
	}
	if lb.target == 0 {
		return cfgDead
	}
	return lb.target
}

// kindCount is the number of byte kinds in ks.
func kindCount(ks [2]uint64) int { return bits.OnesCount64(ks[0]) + bits.OnesCount64(ks[1]) }

// kindTo returns the live configuration (without exits) byte kind k (see byteKind)
// takes c to, or cfgDead if the bytes of the kind do not all lead to one. Kinds 127
// and kindE2 stand for every valid multi-byte character of theirs.
func (a *arena) kindTo(c int32, k uint) int32 {
	to := func(nx int32) int32 {
		if nx == cfgDead {
			return cfgDead
		}
		return a.info[nx] &^ exitBit
	}
	switch k {
	case 0:
		x := to(a.step(c, kind0Bytes[0]))
		for _, b := range kind0Bytes[1:] {
			if to(a.step(c, b)) != x {
				return cfgDead
			}
		}
		return x
	case 127, kindE2:
	default:
		return to(a.step(c, byte(k)))
	}
	// Every stack must take all the kind's characters or none; then one
	// character stands for all of them.
	for _, e := range a.cfgs[c].entries {
		n := e.node()
		if n <= nodeExit {
			continue
		}
		if e.partial() != 0 {
			return cfgDead
		}
		el := a.g.elems[a.nodes[n].elem]
		if a.g.rawHigh(el) {
			return cfgDead // takes bytes of characters (byteelems.go)
		}
		if el.op != opChar {
			continue
		}
		if all, none := a.g.classes[el.arg].holdsHigh(k); !all && !none {
			return cfgDead
		}
	}
	// U+00A0 (C2 A0), or U+2000 (E2 80 80)
	seq := []byte{0xC2, 0xA0}
	if k == kindE2 {
		seq = []byte{0xE2, 0x80, 0x80}
	}
	x := c
	for _, b := range seq {
		p := a.step(x, b)
		if p == cfgDead {
			return cfgDead
		}
		x = a.info[p] &^ exitBit
	}
	return x
}

// afterFreeChar returns, for a configuration c reached by the lead byte of a
// multi-byte character, the configuration (without exits) every completion of the
// character leads to: c's stacks must all be inside that character in free states
// (partial.freeFor: every completion is in their class), so which continuation bytes
// follow does not matter. It returns cfgDead when that does not hold (or a limit was
// met: a.hit says which). Answers are memoized per configuration.
func (a *arena) afterFreeChar(c int32) int32 {
	lb := a.loopOf(c)
	if lb.afterKnown {
		return lb.afterChar
	}
	res := cfgDead
	es := a.cfgs[c].entries
	if len(es) > 0 {
		r := es[0].partial().remain()
		ok := r > 0
		for _, e := range es {
			if p := e.partial(); !p.free() || p.remain() != r {
				ok = false
				break
			}
		}
		if ok {
			// Free states ignore the value, so any continuation byte
			// stands for all of them.
			x := c
			for ; r > 0 && x > cfgDead; r-- {
				if x = a.step(x, 0x80); x > cfgDead {
					x = a.info[x] &^ exitBit
				}
			}
			if x > cfgDead {
				res = x
			}
		}
	}
	lb = a.loopOf(c) // stepping may have moved a.loop
	lb.afterChar, lb.afterKnown = res, true
	return res
}

// narrowCfg reports whether configuration c (between characters) takes at most two
// byte values, as at a literal's next character. Memoized per configuration.
func (a *arena) narrowCfg(c int32) bool {
	lb := a.loopOf(c)
	if lb.narrow == 0 {
		f := a.firstBytes(c)
		n := 0
		for _, w := range f {
			n += bits.OnesCount32(w)
		}
		lb = a.loopOf(c)
		lb.narrow = 2
		if n <= 2 {
			lb.narrow = 1
		}
	}
	return lb.narrow == 1
}
