package engine

import (
	"bytes"
	"math/bits"
	"reflect"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/tetherlm/tether/gocore/tokenmask"
)

// trieNode is one node of a flat token trie laid out in depth-first (preorder)
// order: a node's subtree is nodes[i+1 : next]. Walking the trie is a loop over the
// array that either descends (i+1) or skips a rejected subtree (next).
type trieNode struct {
	b      byte
	flags  uint8  // nodeDirty
	depth  uint16 // root is 0
	next   int32  // index just past this node's subtree
	lo, hi int32  // tokens ending here: order[lo:hi]
}

// nodeDirty marks a node of trie.nodes with a token in its subtree that is not
// valid UTF-8 (see validUTF8Prefix).
const nodeDirty uint8 = 1

// trie holds the text tokens of a vocabulary (special, end-of-generation and empty
// tokens are left out: they are matched by id, never by text).
type trie struct {
	nodes    []trieNode
	order    []int32 // token ids sorted by their bytes
	maxDepth int
	size     int
	isEOG    []bool
	eog      []int32 // the ids with isEOG, ascending
	special  []bool
	shared   *sharedCache // position caches shared by the grammars of this trie
	// first[i]: the smallest index into order of a token in node i's subtree
	// (tokens are in preorder, so the subtree holds order[first[i]:first[next]]);
	// first[len(nodes)] = len(order).
	first []int32

	// below[i]: the kinds of byte (byteKind) found in node i's subtree below node i
	// (see arena.runLength).
	below [][2]uint64
	// rootChild[b]: the node of the first byte b (0 if no token starts with b).
	rootChild [256]int32
	// height[i]: the most bytes below node i in its subtree (capped at 255).
	height []uint8
	// tokChars[k]: how many characters token order[k] starts (bytes that are not
	// UTF-8 continuation bytes; capped at 0xFFFF).
	tokChars []uint16
	// text holds the tokens' bytes in trie order, token order[k] at
	// text[textAt[k]:textAt[k+1]]: a walk of sorted indices (walker.walkList)
	// reads them in order instead of gathering them from the vocabulary.
	text   []byte
	textAt []int32
	// byChars: the indices into order sorted by tokChars, most first (see
	// fromCountSibling).
	byChars []int32
	// index[id]: the index of token id in order, or -1 (not a text token).
	index []int32
	// textBits: the set of the tokens in order, as a bitset over ids.
	textBits tokenmask.Mask
	// lcpMin[j][k]: the shortest common prefix (capped at 255 bytes) of two
	// neighbours among order[k-1 : k+2^j], for range-minimum queries (see lcp).
	lcpMin [][]uint8
}

// bytesOf returns the bytes of token order[k].
func (t *trie) bytesOf(k int32) []byte { return t.text[t.textAt[k]:t.textAt[k+1]:t.textAt[k+1]] }

// lcp returns the length of the common prefix of the tokens order[a] and order[b]
// (a < b), capped at 255 bytes: the shortest common prefix of neighbours between
// them, since the tokens are sorted. (A table lookup: walkList asks it of every
// token, most of which it then skips unread.)
func (t *trie) lcp(a, b int32) int {
	n := b - a
	j := bits.Len32(uint32(n)) - 1
	x, y := t.lcpMin[j][a+1], t.lcpMin[j][b-int32(1)<<j+1]
	return int(min(x, y))
}

var trieCache sync.Map // Vocabulary -> *trieSlot

type trieSlot struct {
	once sync.Once
	t    *trie
}

// An attacher keeps values for the engine that live as long as it does
// (*vocab.Vocab's Attach).
type attacher interface {
	Attach(key any, mk func() any) any
}

// trieKey is the key of a vocabulary's token trie in its Attach.
type trieKey struct{}

// trieFor returns the token trie of v, building it once per vocabulary: kept by
// v itself when v can keep it (an attacher: the trie, and the caches that hang
// on it, are collected with v), else in a process-wide table when the value can
// be a map key (pointers, comparable structs), for as long as the process runs.
func trieFor(v Vocabulary) *trie {
	if a, ok := v.(attacher); ok {
		return a.Attach(trieKey{}, func() any { return buildTrie(v) }).(*trie)
	}
	if !reflect.TypeOf(v).Comparable() {
		return buildTrie(v)
	}
	s, _ := trieCache.LoadOrStore(v, &trieSlot{})
	slot := s.(*trieSlot)
	slot.once.Do(func() { slot.t = buildTrie(v) })
	if slot.t == nil { // the first build panicked (a broken Vocabulary): build again
		return buildTrie(v)
	}
	return slot.t
}

func buildTrie(v Vocabulary) *trie {
	n := v.Size()
	t := &trie{size: n, isEOG: make([]bool, n), special: make([]bool, n), shared: newSharedCache()}
	toks := make([][]byte, n)
	ids := make([]int32, 0, n)
	for id := 0; id < n; id++ {
		t.isEOG[id] = v.IsEOG(id)
		if t.isEOG[id] {
			t.eog = append(t.eog, int32(id))
		}
		t.special[id] = v.IsSpecial(id)
		b := v.TokenBytes(id)
		toks[id] = b
		if len(b) == 0 || t.isEOG[id] || t.special[id] || len(b) > 0xFFFF {
			continue
		}
		ids = append(ids, int32(id))
	}
	slices.SortFunc(ids, func(x, y int32) int {
		if c := bytes.Compare(toks[x], toks[y]); c != 0 {
			return c
		}
		return int(x - y)
	})
	t.order = ids
	t.nodes, t.maxDepth = buildNodes(len(ids), func(k int) []byte { return toks[ids[k]] }, func(k int) int32 { return int32(k) })
	t.first = make([]int32, len(t.nodes)+1)
	t.first[len(t.nodes)] = int32(len(ids))
	for i := len(t.nodes) - 1; i >= 0; i-- {
		if nd := &t.nodes[i]; nd.hi > nd.lo {
			t.first[i] = nd.lo
		} else {
			t.first[i] = t.first[i+1]
		}
	}
	for c := int32(1); c < int32(len(t.nodes)); c = t.nodes[c].next {
		t.rootChild[t.nodes[c].b] = c
	}
	t.below = make([][2]uint64, len(t.nodes))
	t.height = make([]uint8, len(t.nodes))
	for i := len(t.nodes) - 1; i >= 0; i-- {
		var m [2]uint64
		for c := int32(i) + 1; c < t.nodes[i].next; c = t.nodes[c].next {
			t.height[i] = max(t.height[i], uint8(min(int(t.height[c])+1, 255)))
			m[0] |= t.below[c][0]
			m[1] |= t.below[c][1]
			k := byteKind(t.nodes[c].b)
			m[k>>6] |= 1 << (k & 63)
		}
		t.below[i] = m
	}
	t.lcpMin = buildLCPMin(ids, toks)
	size := 0
	for _, id := range ids {
		size += len(toks[id])
	}
	t.text = make([]byte, 0, size)
	t.textAt = make([]int32, len(ids)+1)
	for k, id := range ids {
		t.text = append(t.text, toks[id]...)
		t.textAt[k+1] = int32(len(t.text))
	}
	t.tokChars = make([]uint16, len(ids))
	for k, id := range ids {
		n := 0
		for _, b := range toks[id] {
			if b&0xC0 != 0x80 {
				n++
			}
		}
		t.tokChars[k] = uint16(min(n, 0xFFFF))
	}
	t.byChars = sortByChars(t.tokChars)
	t.index = make([]int32, n)
	for i := range t.index {
		t.index[i] = -1
	}
	for k, id := range ids {
		t.index[id] = int32(k)
	}
	t.textBits = tokenmask.New(n)
	for _, id := range ids {
		t.textBits.Set(int(id))
	}
	bad := make([]int32, len(ids)+1) // bad[k]: invalid tokens among order[:k]
	for k, id := range ids {
		bad[k+1] = bad[k]
		if !validUTF8Prefix(toks[id]) {
			bad[k+1]++
		}
	}
	for i := range t.nodes {
		if bad[t.first[t.nodes[i].next]] != bad[t.first[i]] {
			t.nodes[i].flags |= nodeDirty
		}
	}
	return t
}

// buildLCPMin builds trie.lcpMin for the sorted tokens ids.
func buildLCPMin(ids []int32, toks [][]byte) [][]uint8 {
	n := len(ids)
	base := make([]uint8, n)
	for k := 1; k < n; k++ {
		x, y := toks[ids[k-1]], toks[ids[k]]
		l := 0
		for l < len(x) && l < len(y) && l < 255 && x[l] == y[l] {
			l++
		}
		base[k] = uint8(l)
	}
	levels := [][]uint8{base}
	for w := 1; 2*w <= n; w *= 2 {
		prev := levels[len(levels)-1]
		cur := make([]uint8, n-2*w+1)
		for k := range cur {
			cur[k] = min(prev[k], prev[k+w])
		}
		levels = append(levels, cur)
	}
	return levels
}

// byteKind sorts bytes into 128 kinds: an ASCII byte b in 2..0x7E is kind b; NUL,
// 0x01 and DEL share kind 0 (all rare in tokens); the lead byte E2 (the characters
// U+2000-U+2FFF: punctuation such as the line and paragraph separators a regular
// expression's "." refuses) is kindE2; every other byte >= 0x80 is kind 127. So a
// class that holds every character but a few in U+2000-U+2FFF still runs over the
// trie's other multi-byte characters whole (see arena.runLength).
func byteKind(b byte) uint {
	switch {
	case b == 0xE2:
		return kindE2
	case b >= 0x80:
		return 127
	case b == 0x7F || b == 0x01:
		return 0
	}
	return uint(b)
}

// kindE2 is the byte kind of the lead byte E2 (see byteKind).
const kindE2 = 1

// The characters of kindE2's lead byte.
const (
	e2Lo rune = 0x2000
	e2Hi rune = 0x2FFF
)

// validUTF8Prefix reports whether b is valid UTF-8 or a prefix of valid UTF-8 (its
// last character may be cut off).
func validUTF8Prefix(b []byte) bool {
	if utf8.Valid(b) {
		return true
	}
	// Find where the last character starts and try completing it.
	i := len(b) - 1
	for i > 0 && len(b)-i < 4 && b[i]&0xC0 == 0x80 {
		i--
	}
	if !utf8.Valid(b[:i]) {
		return false
	}
	tail := b[i:]
	if utf8.FullRune(tail) {
		return false // complete but invalid
	}
	for _, c1 := range []byte{0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF} {
		for _, c2 := range []byte{0x80, 0xBF} {
			x := append(append([]byte(nil), tail...), c1, c2, 0x80)
			if r, n := utf8.DecodeRune(x); r != utf8.RuneError && n > len(tail) {
				// The completion must keep the bytes we have: DecodeRune read them.
				return true
			}
		}
	}
	return false
}

// buildNodes builds flat trie nodes for count byte strings given in sorted order;
// pos maps the k-th string to its index in the owning order array.
func buildNodes(count int, key func(k int) []byte, pos func(k int) int32) ([]trieNode, int) {
	nodes := []trieNode{{depth: 0}}
	open := []int32{0} // open[d] = node index at depth d on the current path
	var prev []byte
	maxDepth := 0
	for k := 0; k < count; k++ {
		s := key(k)
		l := 0
		for l < len(s) && l < len(prev) && s[l] == prev[l] {
			l++
		}
		// close nodes deeper than l
		for d := len(open) - 1; d > l; d-- {
			nodes[open[d]].next = int32(len(nodes))
		}
		open = open[:l+1]
		for d := l; d < len(s); d++ {
			open = append(open, int32(len(nodes)))
			nodes = append(nodes, trieNode{b: s[d], depth: uint16(d + 1)})
		}
		last := &nodes[open[len(s)]]
		p := pos(k)
		if last.hi == 0 || last.hi != p {
			last.lo, last.hi = p, p+1
		} else {
			last.hi = p + 1
		}
		if len(s) > maxDepth {
			maxDepth = len(s)
		}
		prev = s
	}
	for d := len(open) - 1; d >= 0; d-- {
		nodes[open[d]].next = int32(len(nodes))
	}
	return nodes, maxDepth
}

// Prepare builds and caches the token trie of v ahead of the first Compile (which
// would otherwise build it). It is cheap for a vocabulary already prepared.
func Prepare(v Vocabulary) error {
	if v == nil {
		return &CompileError{Msg: "nil vocabulary"}
	}
	trieFor(v)
	return nil
}
