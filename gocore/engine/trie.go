package engine

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"sync"
)

// trieNode is one node of a flat token trie laid out in depth-first (preorder)
// order: a node's subtree is nodes[i+1 : next]. Walking the trie is a loop over the
// array that either descends (i+1) or skips a rejected subtree (next).
type trieNode struct {
	b      byte
	depth  uint16 // root is 0
	next   int32  // index just past this node's subtree
	lo, hi int32  // tokens ending here: order[lo:hi]
}

// trie holds the text tokens of a vocabulary (special, end-of-generation and empty
// tokens are left out: they are matched by id, never by text).
type trie struct {
	nodes    []trieNode
	order    []int32 // token ids sorted by their bytes
	maxDepth int
	size     int
	isEOG    []bool
	special  []bool
	shared   *sharedCache // position caches shared by the grammars of this trie
	// first[i]: the smallest index into order of a token in node i's subtree
	// (tokens are in preorder, so the subtree holds order[first[i]:first[next]]);
	// first[len(nodes)] = len(order).
	first []int32
}

var trieCache sync.Map // Vocabulary -> *trieSlot

type trieSlot struct {
	once sync.Once
	t    *trie
}

// trieFor returns the token trie of v, building it once per vocabulary value when
// the value can be a map key (pointers, comparable structs).
func trieFor(v Vocabulary) *trie {
	if !reflect.TypeOf(v).Comparable() {
		return buildTrie(v)
	}
	s, _ := trieCache.LoadOrStore(v, &trieSlot{})
	slot := s.(*trieSlot)
	slot.once.Do(func() { slot.t = buildTrie(v) })
	if slot.t == nil { // the build panicked once; let the caller's recover see it again
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
	return t
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
// would otherwise build it). It is cheap for a vocabulary already prepared. The
// error reports a Vocabulary that failed (panicked) while being read.
func Prepare(v Vocabulary) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("engine: building the token trie: %v", r)
		}
	}()
	if v != nil {
		trieFor(v)
	}
	return nil
}
