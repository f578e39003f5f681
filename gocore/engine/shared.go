package engine

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Position caches shared across grammars.
//
// A posCache depends only on the vocabulary's token trie and on the grammar
// structure its analysis can reach: the elements from each stack level's position to
// the end of that level's alternative, every rule they reference (transitively),
// whether the stack ends below its levels (bottom), the follow bytes of the deepest
// level's rule (exitFlags), and the stack limits (which decide overflow). It does
// not depend on how elements, rules or classes are numbered. So each slot gets a
// fingerprint, a SHA-256 of a canonical serialization of exactly that (rules
// renumbered in the order a deterministic walk first meets them, character classes
// written out in full), and the analysis result is kept in a per-trie (so
// per-vocabulary) table keyed by it, which every grammar compiled for the vocabulary
// consults before analyzing. JSON Schema grammars repeat the same string, number and
// whitespace rules, so most of their positions are analyzed once per process.
//
// Results that hit a stack limit are never shared (their error names a grammar's
// rule, and their content depends on the order the limit was met).

// DefaultSharedCacheBytes is the default bound on the memory the shared position
// caches of one vocabulary keep alive (least recently used entries are dropped first;
// grammars keep the caches they already use).
const DefaultSharedCacheBytes = 256 << 20

var sharedLimit atomic.Int64

func init() { sharedLimit.Store(DefaultSharedCacheBytes) }

// SetSharedCacheLimit sets the bound, in bytes, on the position caches kept per
// vocabulary for sharing across grammars (see WithSharedCache); 0 or less disables
// keeping new ones. It returns the previous bound.
func SetSharedCacheLimit(bytes int64) int64 {
	if bytes < 0 {
		bytes = 0
	}
	old := sharedLimit.Swap(bytes)
	return old
}

// WithSharedCache says whether the grammar's position caches (the per-position token
// splits computed on the first visit of a grammar position) are looked up in, and
// added to, the table shared by all grammars of the same vocabulary (default true).
// Sharing changes no mask; it only saves the analysis time.
func WithSharedCache(on bool) Option { return func(o *options) { o.noShare = !on } }

// SharedCacheStats describes the shared position caches of one vocabulary.
type SharedCacheStats struct {
	Entries  int   // caches kept
	Bytes    int64 // their approximate size
	Hits     int64 // lookups answered from the table
	Misses   int64 // lookups that had to analyze
	Analyses int64 // analyses run by grammars of this vocabulary (shared or not)
}

// SharedCacheStats returns the statistics of the shared position caches of the
// grammar's vocabulary.
func (g *Grammar) SharedCacheStats() SharedCacheStats {
	return g.trie.shared.stats()
}

type fingerprint [sha256.Size]byte

type sharedEntry struct {
	key   fingerprint
	pc    *posCache
	bytes int64
}

// sharedCache is the per-trie table of position caches, an LRU bounded by bytes.
type sharedCache struct {
	mu    sync.Mutex
	m     map[fingerprint]*list.Element
	lru   list.List // front: most recent
	bytes int64

	hits, misses, analyses atomic.Int64
}

func newSharedCache() *sharedCache {
	return &sharedCache{m: map[fingerprint]*list.Element{}}
}

func (c *sharedCache) get(k fingerprint) *posCache {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[k]; ok {
		c.lru.MoveToFront(e)
		return e.Value.(*sharedEntry).pc
	}
	return nil
}

func (c *sharedCache) put(k fingerprint, pc *posCache) {
	limit := sharedLimit.Load()
	n := pc.bytes()
	if n > limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[k]; ok {
		old := e.Value.(*sharedEntry)
		c.bytes += n - old.bytes
		old.pc, old.bytes = pc, n
		c.lru.MoveToFront(e)
	} else {
		c.m[k] = c.lru.PushFront(&sharedEntry{key: k, pc: pc, bytes: n})
		c.bytes += n
	}
	for c.bytes > limit {
		e := c.lru.Back()
		if e == nil {
			break
		}
		se := e.Value.(*sharedEntry)
		c.lru.Remove(e)
		delete(c.m, se.key)
		c.bytes -= se.bytes
	}
}

func (c *sharedCache) stats() SharedCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return SharedCacheStats{Entries: len(c.m), Bytes: c.bytes,
		Hits: c.hits.Load(), Misses: c.misses.Load(), Analyses: c.analyses.Load()}
}

// bytes approximates the memory a posCache holds.
func (pc *posCache) bytes() int64 {
	return int64(unsafe.Sizeof(*pc)) + 4*int64(len(pc.accepted)+len(pc.acceptIDs)+len(pc.uncList)) +
		int64(unsafe.Sizeof(trieNode{}))*int64(len(pc.sub)) + 64
}

// fingerprint hashes everything analyze reads for slot s (see the comment at the
// top of this file). Any change here must keep it a superset of what analyze,
// startAt, stepSlow, expand and finish read: a missing input makes two different
// analyses share one result, which is a soundness bug.
//
// A walk of tokens of at most L bytes (L: the longest token that can start at the
// slot, tokenReach; at most the trie's depth) never reaches an
// element that needs more than L bytes to get to, not even to push it as a stack's
// top, so the structure is written out only as far as L bytes reach: every
// element's distance (the fewest bytes matched before it, with Grammar.minLen for
// calls) is worked out in a shortest-path walk over rules, and an alternative is cut
// ('Z') at its first element past L. Keys that differ only beyond that, like
// `char{0,150}` and `char{0,149}` after unrolling into nested rules, share one
// analysis.
//
// ok is false when what the slot reaches is larger than maxFingerprintBytes
// written out: writing it out would cost more than analyzing most such slots, and
// so large a structure (much of one big schema) is rarely met again.
//
// follow is the follow set written for the deepest level's rule (the rule's own,
// or the wider set of a core, see coreFollow).
func (g *Grammar) fingerprint(s *posSlot, follow *byteSet) (key fingerprint, ok bool) {
	budget := g.tokenReach(s)
	sc := g.fpScratch()
	defer g.fpPool.Put(sc)
	b := append(sc.b[:0], 'P', 5) // format version
	defer func() { sc.b = b[:0] }()
	b = binary.AppendUvarint(b, uint64(g.opts.maxStacks))
	b = binary.AppendUvarint(b, uint64(g.opts.maxWork))
	b = binary.AppendUvarint(b, uint64(g.size))
	b = binary.AppendUvarint(b, uint64(budget))
	if s.bottom {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	for _, w := range follow {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	b = binary.AppendUvarint(b, uint64(len(s.elems)))
	for i, el := range s.elems {
		if g.elems[el].op == opRepeat {
			// The counts of a counter level (clamped, as in the slot key).
			b = append(b, 'K')
			b = binary.AppendUvarint(b, uint64(i))
			b = binary.AppendUvarint(b, uint64(s.cnts[i][0]))
			b = binary.AppendUvarint(b, uint64(s.cnts[i][1]))
		}
	}

	// Per rule met: its local number, in order of first reference, and the
	// fewest bytes matched before entering it (sc's arrays, valid where
	// stamped with this call's epoch).
	ep := sc.next()
	nLocal := uint32(0)
	if len(sc.buckets) < int(budget)+1 {
		sc.buckets = make([][]int32, budget+1)
	}
	buckets := sc.buckets[:budget+1]
	for i := range buckets {
		buckets[i] = buckets[i][:0]
	}
	localOf := func(r int32) uint32 {
		if sc.stamp[r] != ep {
			sc.stamp[r], sc.local[r], sc.dist[r] = ep, nLocal, math.MaxInt32
			nLocal++
		}
		return sc.local[r]
	}
	enter := func(r, d int32) {
		if sc.dist[r] <= d {
			return
		}
		sc.dist[r] = d
		buckets[d] = append(buckets[d], r)
	}
	// counted: the first element run is a counter level of the slot, whose
	// counts were written above.
	run := func(i, d int32, counted bool) {
		for first := true; len(b) <= maxFingerprintBytes; i, first = i+1, false {
			e := g.elems[i]
			if e.op == opEnd {
				b = append(b, 'E')
				return
			}
			if d > budget {
				b = append(b, 'Z')
				return
			}
			switch e.op {
			case opChar:
				c := &g.classes[e.arg]
				b = append(b, 'C')
				if c.neg {
					b = append(b, 1)
				} else {
					b = append(b, 0)
				}
				b = binary.AppendUvarint(b, uint64(len(c.ranges)))
				for _, r := range c.ranges {
					b = binary.AppendVarint(b, int64(r.Lo))
					b = binary.AppendVarint(b, int64(r.Hi))
				}
				d++
			case opRef:
				b = append(b, 'R')
				b = binary.AppendUvarint(b, uint64(localOf(e.arg)))
				enter(e.arg, d)
				d += g.minLen[e.arg]
			case opRepeat:
				b = append(b, 'N')
				b = binary.AppendUvarint(b, uint64(localOf(e.arg)))
				if !first || !counted {
					// Counts clamped as in slot keys: a walk of at most L bytes
					// tells no counts above L+1 apart (see clampCount), so
					// `char{0,4096}` and `char{0,8192}` share their analyses.
					// A counter level's bounds are not read: its counts are
					// what it has left, and a counter starting afresh comes
					// from a rule, which is written out in full.
					b = binary.AppendUvarint(b, uint64(g.clampCount(e.lo)))
					b = binary.AppendUvarint(b, uint64(g.clampCount(e.hi)))
				}
				enter(e.arg, d)
				// d stays: a frame on the counter may need no more rounds.
			case opByte:
				// The set itself: its index is the grammar's own.
				b = append(b, 'B')
				for _, w := range g.byteSets[e.arg].bits {
					b = binary.LittleEndian.AppendUint32(b, w)
				}
				d++
			case opToken:
				b = append(b, 'T')
				if e.neg {
					b = append(b, 1)
				} else {
					b = append(b, 0)
				}
				b = binary.AppendVarint(b, int64(e.arg))
			default:
				b = append(b, 'X', byte(e.op))
				b = binary.AppendVarint(b, int64(e.arg))
			}
		}
	}
	var d int32
	for _, el := range s.elems {
		run(el, min(d, budget+1), s.cnts != nil && g.elems[el].op == opRepeat)
		d = min(d+g.minRest[el], minCap)
	}
	for d := int32(0); d <= budget && len(b) <= maxFingerprintBytes; d++ {
		for k := 0; k < len(buckets[d]) && len(b) <= maxFingerprintBytes; k++ {
			r := buckets[d][k]
			if sc.done[r] == ep || sc.dist[r] != d {
				continue
			}
			sc.done[r] = ep
			alts := g.rules[r]
			b = append(b, 'A')
			b = binary.AppendUvarint(b, uint64(sc.local[r]))
			b = binary.AppendUvarint(b, uint64(len(alts)))
			for _, alt := range alts {
				run(alt, d, false)
			}
		}
	}
	if len(b) > maxFingerprintBytes {
		return key, false
	}
	return sha256.Sum256(b), true
}

// fpScratch is fingerprint's working memory, reused from call to call: per
// rule, arrays that are valid where stamped with the current call's epoch, so a
// call costs what it touches, not the grammar's size.
type fpScratch struct {
	epoch       uint32
	stamp, done []uint32 // per rule: the epoch local and dist were set, the epoch its alternatives were written
	local       []uint32
	dist        []int32
	buckets     [][]int32
	b           []byte
}

// next starts a call: a fresh epoch (clearing the stamps when it wraps).
func (sc *fpScratch) next() uint32 {
	sc.epoch++
	if sc.epoch == 0 {
		clear(sc.stamp)
		clear(sc.done)
		sc.epoch = 1
	}
	return sc.epoch
}

// fpScratch takes a scratch for a fingerprint of this grammar (concurrent
// analyses each take their own).
func (g *Grammar) fpScratch() *fpScratch {
	if sc, ok := g.fpPool.Get().(*fpScratch); ok {
		return sc
	}
	n := len(g.rules)
	return &fpScratch{stamp: make([]uint32, n), done: make([]uint32, n), local: make([]uint32, n), dist: make([]int32, n), b: make([]byte, 0, 256)}
}

// tokenReach returns the most bytes of a token an analysis of slot s can walk:
// the longest token whose first byte can start the top element's character (an
// analysis walks no other token: it starts at the bytes the top takes, and a
// derived one walks a subset of its parent's tokens, whose top is the same).
// A key's top is `"` or a letter far more often than a space: Llama-3's longest
// tokens starting with `"` have 12 bytes, with a space 128, so a fingerprint
// written out only this far describes much less of the grammar and meets its
// twins across objects and schemas far more often.
func (g *Grammar) tokenReach(s *posSlot) int32 {
	t := g.trie
	e := g.elems[s.elems[0]]
	if e.op != opChar {
		return int32(t.maxDepth)
	}
	first := &g.classes[e.arg].first
	reach := 0
	for b := range 256 {
		if c := t.rootChild[b]; c != 0 && first.has(byte(b)) {
			reach = max(reach, 1+int(t.height[c]))
		}
	}
	return int32(min(reach, t.maxDepth))
}

// maxFingerprintBytes bounds the structure a fingerprint writes out (see
// fingerprint).
const maxFingerprintBytes = 8 << 10

// Cores: one analysis for the follow sets of JSON values.
//
// A slot's fingerprint holds the follow set of its deepest rule, since a token
// that leaves the frame is uncertain or rejected by its next byte. The same string
// or number frame is followed by `,` in one schema, `}` in another and by either
// in a third, so the three keys differ and each grammar walks the whole trie for
// its own. But the analysis with a wider follow set differs from the rule's own
// only in the tokens that leave the frame: it accepts the same tokens (those that
// stay inside the frame or end where it ends do not read the follow set), rejects
// a subset of the same (a token rejected under the wider set has no path out of
// the frame at all), and leaves the rest uncertain. So it is a valid parent of the
// slot's own analysis (see analyze): walking its uncertain tokens with the rule's
// follow set gives the exact split. That analysis, the core, is shared under a key
// with the wider set, coreBytes, for every follow set inside it: the bytes that
// follow JSON values and keys.

// coreBytes is the follow set of a core (see above): whitespace and the bytes
// that end a JSON value or key.
var coreBytes = func() (s byteSet) {
	for _, b := range []byte("\t\n\r ,:]}") {
		s.add(b)
	}
	return s
}()

// coreFollow returns the follow set of the core of a slot whose deepest rule is
// followed by follow, and whether the slot has a core: follow lies inside
// coreBytes and is not all of it (then the slot is its own core).
func coreFollow(follow *byteSet) (byteSet, bool) {
	if *follow == coreBytes {
		return coreBytes, false
	}
	for i, w := range follow {
		if w&^coreBytes[i] != 0 {
			return byteSet{}, false
		}
	}
	return coreBytes, true
}

// sharedCore returns the core of slot s (its analysis with follow set wide, see
// above) from the vocabulary's shared table, analyzing it in arena a and sharing
// it when it is not there yet; nil when the core cannot serve as a parent (its
// analysis met a limit or stopped early) or its key is too large.
func (g *Grammar) sharedCore(a *arena, s *posSlot, wide *byteSet) *posCache {
	sh := g.trie.shared
	key, ok := g.fingerprint(s, wide)
	if !ok {
		return nil
	}
	pc := sh.get(key)
	if pc != nil {
		sh.hits.Add(1)
	} else {
		sh.misses.Add(1)
		pc = g.analyze(a, s, nil, wide)
		sh.analyses.Add(1)
		if pc.overflow != nil {
			return nil
		}
		sh.put(key, pc)
	}
	if pc.overflow != nil || pc.truncated || len(pc.uncList) > maxDerivedList {
		return nil // analyze would walk the whole trie again
	}
	return pc
}
