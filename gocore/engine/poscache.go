package engine

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tetherlm/tether/gocore/tokenmask"
)

// posCache is the context-independent split of the vocabulary for one terminal
// position p (a char element on top of a stack, between characters), computed once
// per Grammar by walking the token trie with the stack [p | exit], where "exit"
// stands for whatever the real stack holds below p's frame:
//
//   - accepted: tokens that some path matches without leaving p's frame, or that
//     end exactly where the frame ends; they are allowed whatever lies below.
//   - uncertain: tokens that leave the frame with bytes left over (and whose next
//     byte may follow p's rule somewhere in the grammar); only these need the real
//     stack, and they are kept as a small trie of their own.
//   - all other tokens are rejected whatever lies below.
type posCache struct {
	accepted  tokenmask.Mask // the accepted token ids, or nil when acceptIDs holds them
	acceptIDs []int32        // the accepted ids, when they are few (sparse form)
	count     int            // number of accepted tokens
	sub       []trieNode     // trie of the uncertain tokens (indices into trie.order)
	subDepth  int
	overflow  error // a limit was met: the split is not exact, masks walk the real stacks
	uncertain int   // number of uncertain tokens

	// uncList holds the uncertain tokens (sorted indices into trie.order) instead
	// of sub in a cache that is never used for masks, only to derive deeper keys'
	// caches from: one of a shallower key that leaves too many tokens uncertain.
	uncList []int32

	// truncated: the analysis of such a shallower key stopped once more than
	// maxParentUncertain tokens were uncertain (deriving from it would save little):
	// only uncertain (a lower bound) and overflow are set.
	truncated bool

	// keepUnc, in a cache made only to derive another from (fromCountSibling):
	// tokens (sorted indices into trie.order) the derived cache keeps uncertain
	// without walking them.
	keepUnc []int32
}

// maxParentUncertainDiv bounds the uncertain tokens a cache never used for masks keeps
// for deriving deeper keys' caches (see posCache.truncated), as a share of the
// trie's tokens.
const maxParentUncertainDiv = 8

// orInto sets the accepted tokens in mask.
func (pc *posCache) orInto(mask tokenmask.Mask) {
	if pc.accepted != nil {
		mask.Or(pc.accepted)
		return
	}
	for _, id := range pc.acceptIDs {
		mask.Set(int(id))
	}
}

// acceptedBits returns a fresh bitset of the accepted tokens.
func (pc *posCache) acceptedBits(words int) tokenmask.Mask {
	if pc.accepted != nil {
		return slices.Clone(pc.accepted)
	}
	bits := make(tokenmask.Mask, words)
	for _, id := range pc.acceptIDs {
		bits.Set(int(id))
	}
	return bits
}

// A position cache is keyed by the top levels of a stack. One level (the rule
// alternative on top) is shared by every context the rule is used in, but it can be
// too shallow, for instance where the parser made a group its own rule: the frame
// ends after one character and nearly every token is uncertain. So the depth is
// adaptive: a stack uses the shallowest key whose cache leaves at most maxUncertain
// tokens uncertain, up to maxKeyDepth levels.
const (
	maxKeyDepth  = 4
	maxUncertain = 256
)

// maxDerivedList bounds the uncertain tokens of a shallower key's cache that a
// deeper key's analysis walks one by one (walker.walkList); past it a walk of the
// whole trie, which settles subtrees by runs, costs less. Near the end of a
// string with a minLength and maxLength, thousands of tokens (those holding the
// closing quote at the offsets left) stay uncertain key after key; walking them
// beats walking the whole trie up to some 16k (the MaskBench dev split's slowest
// masks, 5-12 ms with a bound of 4,096, are 1-2 ms with this one, except one).
const maxDerivedList = 16384

// capTokenLoop is the smallest run cap (in characters) for which analyze settles a
// subtree by the characters of each of its tokens; below it the walk descends
// instead, visiting only the nodes within the cap, which are fewer than the tokens
// below. (Measured on MaskBench with Llama-3: descending under caps of 1 and 2 cut
// the mask p50 and p99.9 by about a tenth; under caps up to 7 it visited most of
// the trie and the slowest masks doubled.)
const capTokenLoop = 3

// loopMinNodes is the smallest subtree (in trie nodes) analyze tries to accept whole
// through a run of configurations (arena.runLength) rather than walk.
const loopMinNodes = 4

// slotOf picks the position cache for stack node n (see maxKeyDepth). A deeper
// key's cache is derived from the shallower one's (see analyze), so escalating only
// re-walks the tokens the shallower key left uncertain.
//
// Between two depths d-1 and d, when the return address at level d calls a rule R
// (as in `x ::= ... ws expression ";"`, where returning from ws means calling
// expression), the key of levels 1..d-1 over a trampoline "call R, then return" is
// tried first, and before it one over the rule every alternative of R starts with,
// transitively (expression ::= term ..., term ::= factor ...: factor).
//
// Keys whose levels can match at most shortFrame bytes (a rule that is one
// character, as parsers make of groups) are skipped: they leave nearly every
// token uncertain. Deriving across two levels is as sound as across one. It stands for the real stack seen with level d split in
// two (call R; then the rest of level d), so it is a valid key one level deeper than
// d-1, and the real level-d key is one level deeper than it. Where R is called from
// many places (a value after whitespace, an expression after an operator), the
// tokens that only reach into R are then analyzed once for all of them, and each
// call site re-walks just the few tokens that get past R.
func (g *Grammar) slotOf(a *arena, n int32) *posSlot {
	var buf [maxKeyDepth]int32
	var cbuf [maxKeyDepth][2]int32
	var cnts [][2]int32 // counts of the counter levels (clamped, see clampCount), if any
	k := 0
	t := n
	for k < maxKeyDepth && t > nodeExit && a.nodes[t].elem != elemUnion {
		// A union of tails ends the key: it stands for a caller frame.
		nd := &a.nodes[t]
		buf[k] = nd.elem
		if g.elems[nd.elem].op == opRepeat {
			cbuf[k] = [2]int32{g.clampCount(nd.need), g.clampCount(nd.left)}
			cnts = cbuf[:]
		}
		t = nd.tail
		k++
	}
	sub := func(d int) [][2]int32 {
		if cnts == nil {
			return nil
		}
		return cnts[:d]
	}
	var prev *posCache
	reach := 0 // bytes the levels above d can match at most (see Grammar.rem)
	for d := 1; ; d++ {
		above := reach
		reach = min(reach+int(g.rem[buf[d-1]]), remMany)
		if e := g.elems[buf[d-1]]; d >= 2 && e.op == opRef {
			// Trampolines: first over the rule R's call chain leads to (every
			// alternative of R starts by calling it), then over R.
			var tk [maxKeyDepth]int32
			copy(tk[:], buf[:d-1])
			for i, r := range [2]int32{g.lead[e.arg], e.arg} {
				if i == 0 && r == e.arg {
					continue
				}
				if above+int(g.rem[g.tramp[r]]) <= shortFrame {
					continue
				}
				tk[d-1] = g.tramp[r]
				s := g.slotForKey(tk[:d], sub(d), false)
				pc := s.get(g, prev)
				if pc.uncertain <= maxUncertain {
					return s
				}
				prev = pc
			}
		}
		if d < k && reach <= shortFrame {
			// So short a frame leaves nearly every token uncertain: the key
			// is worth nothing, for masks or to derive from.
			continue
		}
		bottom := d == k && t == nodeBottom
		s := g.slotForKey(buf[:d], sub(d), bottom)
		if d == k {
			if prev != nil {
				s.get(g, prev)
			}
			return s
		}
		pc := s.get(g, prev)
		if pc.uncertain <= maxUncertain {
			return s
		}
		prev = pc
	}
}

// shortFrame: slotOf skips keys whose levels can match at most this many bytes.
const shortFrame = 4

// clampCount caps a counter's count (rounds needed or left) for a position cache
// key: a token of at most L bytes completes at most L rounds (a counter's rule
// never matches the empty string), so counts above L+1 all behave alike within
// one token, and sharing one key keeps a long counter from needing an analysis
// per count.
func (g *Grammar) clampCount(c int32) int32 { return min(c, int32(g.trie.maxDepth)+2) }

// posSlot is the lazily computed cache for one stack prefix.
type posSlot struct {
	elems  []int32    // top first
	cnts   [][2]int32 // per level: a counter's (need, left), clamped; nil if no counter
	bottom bool       // the stack ends below elems (no caller frame: exact)
	pc     atomic.Pointer[posCache]
	mu     sync.Mutex // held while the cache is computed

	// The slot's count-sibling key (counts.go), worked out once, under mu.
	sibKey    string
	sibCounts []int32
	sibOK     bool
	sibDone   bool
}

// slotForKey returns the slot of the stack prefix elems (top first), over nothing if
// bottom and over a caller frame otherwise.
func (g *Grammar) slotForKey(elems []int32, cnts [][2]int32, bottom bool) *posSlot {
	var kb [12*maxKeyDepth + 1]byte
	key := kb[:0]
	for i, e := range elems {
		key = binary.LittleEndian.AppendUint32(key, uint32(e))
		if cnts != nil && g.elems[e].op == opRepeat {
			key = binary.LittleEndian.AppendUint32(key, uint32(cnts[i][0]))
			key = binary.LittleEndian.AppendUint32(key, uint32(cnts[i][1]))
		}
	}
	if bottom {
		key = append(key, 1)
	}
	g.posMu.Lock()
	defer g.posMu.Unlock()
	if s, ok := g.slots[string(key)]; ok {
		return s
	}
	s := &posSlot{elems: slices.Clone(elems), bottom: bottom}
	if cnts != nil {
		s.cnts = slices.Clone(cnts)
	}
	g.slots[string(key)] = s
	return s
}

// cache returns the slot's cache, computing it on first use.
func (s *posSlot) cache(g *Grammar) *posCache { return s.get(g, nil) }

// get returns the slot's cache, computing it on first use; parent, if not nil, is
// the cache of the slot one level shallower (the same elems but the last, over a
// caller frame), which the computation may start from. Different slots are computed
// concurrently; one slot's computation is done once.
func (s *posSlot) get(g *Grammar, parent *posCache) *posCache {
	if pc := s.pc.Load(); pc != nil {
		return pc
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if pc := s.pc.Load(); pc != nil {
		return pc
	}
	pc := g.computeCache(s, parent)
	s.pc.Store(pc)
	if pc.overflow == nil && !pc.truncated {
		g.noteCounted(s)
	}
	return pc
}

// computeCache finds the slot's cache in the vocabulary's shared table or analyzes
// the slot (and shares the result).
func (g *Grammar) computeCache(s *posSlot, parent *posCache) *posCache {
	sh := g.trie.shared
	share := !g.opts.noShare
	var key fingerprint
	if share && g.narrowTop(s) {
		// Cheap to analyze (one first byte or two): not worth a fingerprint.
		share = false
	}
	follow := &g.follow[g.deepRule(s)]
	if share {
		key, share = g.fingerprint(s, follow)
	}
	if share {
		if pc := sh.get(key); pc != nil {
			sh.hits.Add(1)
			return pc
		}
		sh.misses.Add(1)
	}
	if parent == nil {
		if pc := g.fromTwin(s); pc != nil {
			if share {
				sh.put(key, pc)
			}
			return pc
		}
	}
	a := g.getArena()
	var pc *posCache
	if parent == nil {
		pc = g.fromCountSibling(a, s)
	}
	if pc == nil && parent == nil && share && sharedLimit.Load() > 0 {
		// (A core is worth its analysis only when the table keeps it.)
		if wide, ok := coreFollow(follow); ok {
			if core := g.sharedCore(a, s, &wide); core != nil {
				pc = g.analyze(a, s, core, follow)
			}
		}
	}
	if pc == nil {
		pc = g.analyze(a, s, parent, follow)
	}
	sh.analyses.Add(1)
	g.putArena(a)
	if pc.overflow != nil {
		return pc // depends on the order limits were met: not shared
	}
	if share {
		sh.put(key, pc)
	}
	return pc
}

// deepRule returns the rule of the slot's deepest level (its last element): the
// rule whose follow set bounds what the slot's analysis walks past.
func (g *Grammar) deepRule(s *posSlot) int32 { return g.ruleOf[s.elems[len(s.elems)-1]] }

// narrowTop reports whether at most two bytes can start the slot's top character.
func (g *Grammar) narrowTop(s *posSlot) bool {
	e := g.elems[s.elems[0]]
	if e.op != opChar {
		return false
	}
	n := 0
	for _, w := range g.classes[e.arg].first {
		n += bits.OnesCount32(w)
	}
	return n <= 2
}

// getArena takes an analysis arena from the grammar's pool (or makes one), so that
// analyses of different slots run concurrently without the grammar-wide lock.
func (g *Grammar) getArena() *arena {
	g.posMu.Lock()
	defer g.posMu.Unlock()
	if n := len(g.arenas); n > 0 {
		a := g.arenas[n-1]
		g.arenas = g.arenas[:n-1]
		return a
	}
	return newArena(g)
}

func (g *Grammar) putArena(a *arena) {
	// Bound the analysis arena: transition tables are a cache.
	a.trim(1 << 14)
	g.posMu.Lock()
	defer g.posMu.Unlock()
	g.arenas = append(g.arenas, a)
}

// analyze computes the slot's cache in arena a (which must hold no transition
// memoized as dead because of an overflow) by walking the token trie from the
// slot's stack prefix.
//
// With parent, the cache of the slot's prefix one level shallower (s.elems minus
// the last, over a caller frame), only the parent's uncertain tokens are walked:
// deepening the key never changes the verdict on the others. A token the parent
// accepts has a path that stays inside the shallower frames or ends where they end,
// and that path lives on in the deeper stack (which is a superset, level for level).
// A token the parent rejects either dies before any path left the shallower frames
// — the deeper stack holds the same stacks up to there — or dies on the first byte
// after leaving them, a byte that cannot follow their deepest rule; the deeper
// level's continuation (and what lies below it) can only start with bytes in that
// rule's follow set, so it dies there too. The walk is per token (a verdict depends
// only on the path to the token), so walking the parent's trie of uncertain tokens
// gives those tokens the verdicts a walk of the whole trie would.
//
// follow is the set of bytes that may follow the deepest level's rule: the rule's
// own (g.follow), or a superset of it for a core (see sharedCore).
func (g *Grammar) analyze(a *arena, s *posSlot, parent *posCache, follow *byteSet) *posCache {
	t := g.trie
	words := tokenmask.Words(g.size)
	r := g.deepRule(s)
	w := &walker{
		g: g, a: a, t: t,
		cfg:         make([]int32, t.maxDepth+1),
		exits:       make([]uint8, t.maxDepth+1),
		chars:       make([]uint16, t.maxDepth+1),
		follow:      follow,
		followKinds: g.followKinds[r],
	}
	if *follow != g.follow[r] {
		w.followKinds = byteKinds(follow)
	}
	if !s.bottom && len(s.elems) < maxKeyDepth {
		w.abortAt = max(len(t.order)/maxParentUncertainDiv, maxUncertain)
	}
	a.hit = nil
	if w.cfg[0] = a.startAt(s.elems, s.cnts, s.bottom); w.cfg[0] == cfgLimit {
		a.hit = nil
		return &posCache{overflow: g.stackLimit(0)}
	}
	pc := &posCache{}
	derived := parent != nil && parent.overflow == nil && !parent.truncated &&
		(parent.uncList == nil || len(parent.uncList) <= maxDerivedList || parent.keepUnc != nil)
	var aborted bool
	switch {
	case !derived:
		// Only the first bytes some stack can take: a literal visits one
		// subtree, not the trie's 256.
		first := a.firstBytes(w.cfg[0])
		for b := range 256 {
			if !first.has(byte(b)) || t.rootChild[b] == 0 {
				continue
			}
			c := t.rootChild[b]
			if aborted = w.walkTrie(t.nodes, c, t.nodes[c].next, true); aborted {
				break
			}
		}
	case parent.uncList != nil:
		pc.accepted, pc.count = parent.acceptedBits(words), parent.count
		aborted = w.walkList(parent.uncList)
	default:
		pc.accepted, pc.count = parent.acceptedBits(words), parent.count
		aborted = w.walkTrie(parent.sub, 1, int32(len(parent.sub)), false)
	}
	if a.hit != nil {
		pc.overflow, a.hit = a.hit, nil
	}
	if aborted {
		return &posCache{truncated: true, uncertain: len(w.unc), overflow: pc.overflow}
	}
	if !derived {
		if n := w.acc.count(); n <= words/4 {
			// Few: keep their ids, without a bitset.
			pc.acceptIDs = make([]int32, 0, n)
			for k := 0; k < len(w.acc.r); k += 2 {
				pc.acceptIDs = append(pc.acceptIDs, t.order[w.acc.r[k]:w.acc.r[k+1]]...)
			}
			pc.count = n
		} else {
			pc.accepted = make(tokenmask.Mask, words)
		}
	}
	acc := pc.accepted
	if acc != nil {
		pc.count += w.acc.materialize(acc, t, derived)
	}
	unc := w.unc
	if derived && parent.keepUnc != nil {
		unc = mergeSorted(unc, parent.keepUnc)
	}
	g.setUncertain(pc, unc, s)
	if acc != nil {
		pc.setAccepted(acc, pc.count, words)
	}
	return pc
}

// setUncertain stores unc (sorted indices into trie.order) as slot s's uncertain
// tokens: a list in a cache never used for masks (see slotOf), else a trie.
func (g *Grammar) setUncertain(pc *posCache, unc []int32, s *posSlot) {
	t := g.trie
	pc.uncertain = len(unc)
	switch {
	case len(unc) > maxUncertain && !s.bottom && len(s.elems) < maxKeyDepth:
		pc.uncList = unc
	case len(unc) > 0:
		pc.sub, pc.subDepth = buildNodes(len(unc),
			func(k int) []byte { return t.bytesOf(unc[k]) },
			func(k int) int32 { return unc[k] })
	}
}

// setAccepted stores the accepted tokens acc (count of them): as ids when they are
// few (a quarter of the words or fewer), else as the bitset.
func (pc *posCache) setAccepted(acc tokenmask.Mask, count, words int) {
	pc.count = count
	if count > words/4 {
		pc.accepted, pc.acceptIDs = acc, nil
		return
	}
	ids := make([]int32, 0, count)
	for w, x := range acc {
		for ; x != 0; x &= x - 1 {
			ids = append(ids, int32(w*32+bits.TrailingZeros32(x)))
		}
	}
	pc.accepted, pc.acceptIDs = nil, ids
}

// uncertainList returns the cache's uncertain tokens, as sorted indices into
// trie.order, whichever form holds them.
func (pc *posCache) uncertainList() []int32 {
	if pc.uncList != nil {
		return pc.uncList
	}
	var unc []int32
	for _, nd := range pc.sub {
		for k := nd.lo; k < nd.hi; k++ {
			unc = append(unc, k)
		}
	}
	return unc
}

// cutTokens returns the accepted tokens of pc, in a fresh bitset (and their count)
// or as ids, and its uncertain tokens (sorted indices into trie.order), all less the
// tokens cut: each calls its argument with the index into trie.order of every token
// cut, and has reports whether an index is cut.
func (g *Grammar) cutTokens(pc *posCache, each func(func(k int32)), has func(k int32) bool) (acc tokenmask.Mask, ids []int32, count int, unc []int32) {
	t := g.trie
	if pc.accepted != nil {
		acc = slices.Clone(pc.accepted)
		each(func(k int32) { acc.Unset(int(t.order[k])) })
		for _, w := range acc {
			count += bits.OnesCount32(w)
		}
	} else {
		ids = make([]int32, 0, len(pc.acceptIDs))
		for _, id := range pc.acceptIDs {
			if !has(t.index[id]) {
				ids = append(ids, id)
			}
		}
		count = len(ids)
	}
	for _, k := range pc.uncertainList() {
		if !has(k) {
			unc = append(unc, k)
		}
	}
	return acc, ids, count, unc
}

// walker is one analysis walk: the configuration and exit flag per depth on the
// current path, and the verdicts found so far.
type walker struct {
	g      *Grammar
	a      *arena
	t      *trie
	cfg    []int32  // per depth: the configuration (without exits) after that byte
	exits  []uint8  // per depth: exitHere | exitOK flags (see exitFlags)
	chars  []uint16 // per depth (walkTrie): characters started on the path
	follow *byteSet
	// followKinds: the byte kinds (see byteKind) of the follow bytes.
	followKinds [2]uint64
	acc         tokRanges // accepted tokens
	unc         []int32   // uncertain tokens, as indices into t.order (sorted)
	abortAt     int       // stop when more tokens are uncertain (0: never)
}

// step advances the configuration at depth d-1 over b.
func (w *walker) step(d int, b byte) int32 {
	c := w.cfg[d-1]
	if c == cfgDead {
		return cfgDead
	}
	return w.a.step(c, b)
}

// walkTrie walks the nodes [from, to) of a flat trie of tokens (t.nodes itself when
// whole, so that t.below applies, or a trie of uncertain tokens); from must be a
// node of depth 1. It reports whether it stopped at
// abortAt.
func (w *walker) walkTrie(nodes []trieNode, from, to int32, whole bool) bool {
	a, t, g := w.a, w.t, w.g
	first := t.first
	cfg, exits := w.cfg, w.exits
	for i := from; i < to; {
		nd := &nodes[i]
		d := int(nd.depth)
		nx := w.step(d, nd.b)
		if nx == cfgDead {
			if exitFlags(w.follow, exits[d-1], nd.b, 0)&exitOK != 0 {
				// Left the frame with bytes to go: this token and every
				// token below it are uncertain.
				if whole {
					for k := first[i]; k < first[nd.next]; k++ {
						w.unc = append(w.unc, k)
					}
				} else {
					for j := i; j < nd.next; j++ {
						for k := nodes[j].lo; k < nodes[j].hi; k++ {
							w.unc = append(w.unc, k)
						}
					}
				}
				if w.abortAt > 0 && len(w.unc) > w.abortAt {
					return true
				}
			}
			i = nd.next
			continue
		}
		inf := a.info[nx]
		if cf := inf &^ exitBit; whole && cf != cfgDead && nd.next-i >= loopMinNodes &&
			nd.flags&nodeDirty == 0 && g.runAt(nd.b) {
			need, h := t.below[i], int(t.height[i])
			if nd.b >= 0xC0 {
				// A lead byte: the run starts once the character is
				// complete, where every completion leads (see
				// arena.afterFreeChar). Tokens that end inside the
				// character are alive too, so a run that lasts accepts
				// the subtree whole; anything else is walked.
				if rc := a.afterFreeChar(cf); rc > cfgDead {
					if n, _, _ := a.runLength(rc, need, h); n >= h {
						w.acc.add(first[i], first[nd.next])
						i = nd.next
						continue
					}
				}
				goto descend
			}
			if a.narrowCfg(cf) && kindCount(need) > 2 {
				// A literal's next character: no run over these kinds, and
				// the few children it takes are cheaper to walk than to prove
				// so.
				goto descend
			}
			n, capAt, capFull := a.runLength(cf, need, h)
			if n >= h {
				// Every token below stays inside the frame: accept the
				// subtree whole.
				w.acc.add(first[i], first[nd.next])
				i = nd.next
				continue
			}
			if capAt >= capTokenLoop && capAt <= n+1 &&
				need[0]&w.followKinds[0] == 0 && need[1]&w.followKinds[1] == 0 {
				// The run ends after its count: tokens within it (in
				// characters) are accepted, tokens past
				// capAt die inside the frame, having left it only where
				// the path to here did (no byte below can follow the
				// frame), and any in between are left uncertain.
				ok := exitFlags(w.follow, exits[d-1], nd.b, inf)&exitOK != 0
				alive := n
				if capFull && capAt == n+1 {
					alive = capAt
				}
				at := int(w.chars[d-1]) + charStart(nd.b)
				if h <= alive {
					w.acc.add(first[i], first[nd.next])
					i = nd.next
					continue
				}
				for k := first[i]; k < first[nd.next]; k++ {
					switch l := int(t.tokChars[k]) - at; {
					case l <= alive:
						w.acc.add(k, k+1)
					case l > capAt && !ok:
					default:
						w.unc = append(w.unc, k)
					}
				}
				if w.abortAt > 0 && len(w.unc) > w.abortAt {
					return true
				}
				i = nd.next
				continue
			}
		}
	descend:
		if nd.hi > nd.lo {
			w.acc.add(nd.lo, nd.hi)
		}
		exits[d] = exitFlags(w.follow, exits[d-1], nd.b, inf)
		w.chars[d] = w.chars[d-1] + uint16(charStart(nd.b))
		cfg[d] = inf &^ exitBit
		i++
	}
	return false
}

// walkList gives the tokens only (sorted indices into t.order) the verdicts
// walkTrie would, stepping each token from where it leaves the previous one. It
// reports whether it stopped at abortAt.
func (w *walker) walkList(only []int32) bool {
	t := w.t
	cfg, exits := w.cfg, w.exits
	deadAt := 0 // the previous token died at this depth (0: it did not)
	var deadUnc bool
	for j, k := range only {
		l := 0
		if j > 0 {
			l = t.lcp(only[j-1], k)
		}
		if deadAt > 0 && deadAt <= l {
			// Same dead prefix: same verdict, without reading the token.
			if deadUnc {
				w.unc = append(w.unc, k)
			}
			continue
		}
		s := t.bytesOf(k) // l <= len(s): see lcp
		deadAt = 0
		for d := l + 1; d <= len(s); d++ {
			nx := w.step(d, s[d-1])
			if nx == cfgDead {
				deadAt = d
				deadUnc = exitFlags(w.follow, exits[d-1], s[d-1], 0)&exitOK != 0
				break
			}
			inf := w.a.info[nx]
			exits[d] = exitFlags(w.follow, exits[d-1], s[d-1], inf)
			cfg[d] = inf &^ exitBit
		}
		switch {
		case deadAt == 0:
			w.acc.add(k, k+1)
		case deadUnc:
			w.unc = append(w.unc, k)
			if w.abortAt > 0 && len(w.unc) > w.abortAt {
				return true
			}
		}
	}
	return false
}

// charStart is 1 for a byte that starts a character (not a UTF-8 continuation
// byte), else 0.
func charStart(b byte) int {
	if b&0xC0 == 0x80 {
		return 0
	}
	return 1
}

// Exit flags of a depth on the walk's current path.
const (
	exitHere uint8 = 1 // the configuration reached there holds nodeExit
	// exitOK: some path left the frame above and the byte right after it can
	// follow the frame's deepest rule, so the token may go on outside the frame.
	exitOK uint8 = 2
)

// exitFlags returns the flags of the depth reached by byte b from a depth with
// flags parent, where inf is the arena info of the configuration reached (0 when
// dead). A token that dies inside the frame is uncertain if exitOK holds where it
// dies, and rejected otherwise: every path that could go on outside left the frame
// at some depth, and the next byte must be able to start what follows the frame's
// deepest rule (a subset of its follow set, whatever the real stack holds there).
func exitFlags(follow *byteSet, parent uint8, b byte, inf int32) uint8 {
	f := parent & exitOK
	if parent&exitHere != 0 && follow.has(b) {
		f = exitOK
	}
	if inf&exitBit != 0 {
		f |= exitHere
	}
	return f
}

// tokRanges collects accepted tokens as sorted runs [lo, hi) of indices into
// trie.order (a walk meets them in that order), so that a subtree accepted whole
// costs one run.
type tokRanges struct{ r []int32 }

func (tr *tokRanges) add(lo, hi int32) {
	if n := len(tr.r); n > 0 && tr.r[n-1] == lo {
		tr.r[n-1] = hi
		return
	}
	tr.r = append(tr.r, lo, hi)
}

// count returns how many tokens the runs hold.
func (tr *tokRanges) count() int {
	n := 0
	for k := 0; k < len(tr.r); k += 2 {
		n += int(tr.r[k+1] - tr.r[k])
	}
	return n
}

// materialize sets the collected tokens in acc and returns how many there are.
// Unless acc already holds other tokens (added), a set covering most of the
// vocabulary is made by clearing the tokens between the runs from the set of all
// text tokens, which touches far fewer bits.
func (tr *tokRanges) materialize(acc tokenmask.Mask, t *trie, added bool) int {
	n := tr.count()
	set := func(lo, hi int32) {
		for _, id := range t.order[lo:hi] {
			acc.Set(int(id))
		}
	}
	if added || n <= len(t.order)/2 {
		for k := 0; k < len(tr.r); k += 2 {
			set(tr.r[k], tr.r[k+1])
		}
		return n
	}
	copy(acc, t.textBits)
	clearRun := func(lo, hi int32) {
		for _, id := range t.order[lo:hi] {
			acc.Unset(int(id))
		}
	}
	prev := int32(0)
	for k := 0; k < len(tr.r); k += 2 {
		clearRun(prev, tr.r[k])
		prev = tr.r[k+1]
	}
	clearRun(prev, int32(len(t.order)))
	return n
}
