package sampling

import (
	"math"
	"slices"
)

// Candidate is one entry of the candidate array: llama.cpp's llama_token_data.
type Candidate struct {
	ID    int32   // token id
	Logit float32 // log-odds; samplers that reshape the distribution change it
	P     float32 // probability, valid only after a sampler computed it (softmax)
}

// Candidates is the array the samplers work on: llama.cpp's llama_token_data_array.
// Samplers reorder Data and shrink it (len(Data) is llama.cpp's size); Selected is the
// index in Data (not the token id) of the chosen candidate, -1 while none is chosen;
// Sorted says Data is in descending order of Logit. Never assume Sorted without checking.
//
// A Candidates value owns a backing buffer that SetLogits reuses, so a sampling loop
// allocates nothing in steady state.
type Candidates struct {
	Data     []Candidate
	Selected int
	Sorted   bool

	buf  []Candidate
	heap []int32 // scratch for partial sorts
}

// NewCandidates returns an empty candidate array with room for n candidates.
func NewCandidates(n int) *Candidates {
	c := &Candidates{Selected: -1}
	if n > 0 {
		c.buf = make([]Candidate, 0, n)
	}
	return c
}

// SetLogits fills the array from a row of logits: candidate i is token i with logit
// logits[i] and p = 0, unsorted, nothing selected (llama.cpp's set_logits). It rejects an
// empty row and NaN logits (+Inf is rejected too; -Inf is allowed and means "never").
func (c *Candidates) SetLogits(logits []float32) error {
	if len(logits) == 0 {
		return ErrEmptyCandidates
	}
	if cap(c.buf) < len(logits) {
		c.buf = make([]Candidate, len(logits))
	}
	d := c.buf[:len(logits)]
	bad := false
	inf := float32(math.Inf(1))
	for i, l := range logits {
		// NaN and +Inf both fail l < +Inf; the error is built after the loop, which
		// stays a copy with a never-taken branch.
		if !(l < inf) {
			bad = true
		}
		d[i] = Candidate{ID: int32(i), Logit: l}
	}
	if bad {
		return badLogits(logits)
	}
	c.Data = d
	c.Selected = -1
	c.Sorted = false
	return nil
}

// badLogits is the error for a row holding a NaN or +Inf logit: the first one.
func badLogits(logits []float32) error {
	for i, l := range logits {
		if !(l < float32(math.Inf(1))) {
			return &ParamError{Param: "logits", Value: l,
				Reason: "logit of token " + itoa(i) + " is not a number below +Inf"}
		}
	}
	return nil
}

// SetCandidates copies an arbitrary candidate list in (unsorted, nothing selected).
func (c *Candidates) SetCandidates(cands []Candidate) error {
	if len(cands) == 0 {
		return ErrEmptyCandidates
	}
	for _, t := range cands {
		if !(t.Logit < float32(math.Inf(1))) {
			return &ParamError{Param: "logits", Value: t.Logit,
				Reason: "logit of token " + itoa(int(t.ID)) + " is not a number below +Inf"}
		}
	}
	if cap(c.buf) < len(cands) {
		c.buf = make([]Candidate, len(cands))
	}
	c.Data = c.buf[:len(cands)]
	copy(c.Data, cands)
	c.Selected = -1
	c.Sorted = false
	return nil
}

// SelectedID returns the token id of the selected candidate, or ErrNoToken.
func (c *Candidates) SelectedID() (int, error) {
	if c.Selected < 0 || c.Selected >= len(c.Data) {
		return -1, ErrNoToken
	}
	return int(c.Data[c.Selected].ID), nil
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	neg := i < 0
	if neg {
		i = -i
	}
	var b [20]byte
	n := len(b)
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		n--
		b[n] = '-'
	}
	return string(b[n:])
}

func byLogitDesc(a, b Candidate) int {
	switch {
	case a.Logit > b.Logit:
		return -1
	case a.Logit < b.Logit:
		return 1
	}
	return 0
}

// heapSelectLimit is the largest k for which partialSort uses a bounded heap (O(n) compares
// plus O(k log k) moves); above it the whole array is sorted.
const heapSelectLimit = 4096

// partialSort moves the k candidates with the highest logits to Data[:k] in descending
// order and keeps the others in Data[k:] (in some order), like std::partial_sort. It marks
// the array sorted only when k covers all of it. Ties are ordered arbitrarily, as in C++.
func (c *Candidates) partialSort(k int) {
	n := len(c.Data)
	if k > n {
		k = n
	}
	if k <= 0 {
		return
	}
	if k >= n || k > heapSelectLimit || k*4 >= n {
		if k >= n || k*4 >= n {
			slices.SortFunc(c.Data, byLogitDesc)
		} else {
			c.quickSelect(k)
			slices.SortFunc(c.Data[:k], byLogitDesc)
		}
		return
	}
	d := c.Data
	// Bounded min-heap of indices of the k best seen so far.
	if cap(c.heap) < k {
		c.heap = make([]int32, k)
	}
	h := c.heap[:k]
	for i := range h {
		h[i] = int32(i)
	}
	less := func(a, b int32) bool { // heap order: worst (lowest logit) at the root
		return d[a].Logit < d[b].Logit
	}
	for i := k/2 - 1; i >= 0; i-- {
		siftDown(h, i, less)
	}
	worst := d[h[0]].Logit // the root's logit, kept in a register for the scan
	for i := k; i < n; i++ {
		if d[i].Logit > worst {
			h[0] = int32(i)
			siftDown(h, 0, less)
			worst = d[h[0]].Logit
		}
	}
	// Move the winners to the front: each loser sitting at an index < k swaps places
	// with a winner sitting at an index >= k.
	slices.Sort(h)
	m, _ := slices.BinarySearch(h, int32(k)) // h[:m] are winners already in front
	a, w := 0, m
	for pos := 0; pos < k && w < k; pos++ {
		if a < m && h[a] == int32(pos) {
			a++
			continue
		}
		d[pos], d[h[w]] = d[h[w]], d[pos]
		w++
	}
	slices.SortFunc(d[:k], byLogitDesc)
}

func siftDown(h []int32, i int, less func(a, b int32) bool) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && less(h[r], h[l]) {
			m = r
		}
		if !less(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// quickSelect reorders Data so that Data[:k] holds the k highest logits (unordered)
// (nth_element). Median-of-three pivots; falls back to sorting small ranges.
func (c *Candidates) quickSelect(k int) {
	d := c.Data
	lo, hi := 0, len(d)-1
	for hi-lo > 16 {
		mid := lo + (hi-lo)/2
		// median of three, descending order
		if d[mid].Logit > d[lo].Logit {
			d[mid], d[lo] = d[lo], d[mid]
		}
		if d[hi].Logit > d[lo].Logit {
			d[hi], d[lo] = d[lo], d[hi]
		}
		if d[hi].Logit > d[mid].Logit {
			d[hi], d[mid] = d[mid], d[hi]
		}
		pivot := d[mid].Logit
		i, j := lo, hi
		for i <= j {
			for d[i].Logit > pivot {
				i++
			}
			for d[j].Logit < pivot {
				j--
			}
			if i <= j {
				d[i], d[j] = d[j], d[i]
				i++
				j--
			}
		}
		// now d[lo..j] >= pivot, d[i..hi] <= pivot
		switch {
		case k-1 <= j:
			hi = j
		case k-1 >= i:
			lo = i
		default:
			return
		}
	}
	slices.SortFunc(d[lo:hi+1], byLogitDesc)
}

// sortDesc fully sorts the array by descending logit (llama.cpp:
// llama_token_data_array_partial_sort_inplace(cur_p, size)).
func (c *Candidates) sortDesc() {
	if !c.Sorted {
		c.partialSort(len(c.Data))
		c.Sorted = true
	}
}

// maxLogit returns the highest logit (Data[0] when sorted).
func (c *Candidates) maxLogit() float32 {
	if c.Sorted {
		return c.Data[0].Logit
	}
	m := c.Data[0].Logit
	for _, t := range c.Data[1:] {
		if t.Logit > m {
			m = t.Logit
		}
	}
	return m
}

// softmax is llama_sampler_softmax_impl: optionally sort, then p_i = exp(l_i - max) / sum,
// summed in float32 in array order.
func (c *Candidates) softmax(doSort bool) {
	if doSort {
		c.sortDesc()
	}
	maxL := c.maxLogit()
	var sum float32
	d := c.Data
	for i := range d {
		p := expf(d[i].Logit - maxL)
		d[i].P = p
		sum += p
	}
	for i := range d {
		d[i].P /= sum
	}
}
