package sampling

// ring is a fixed-capacity ring buffer of token ids (llama.cpp's ring_buffer).
type ring struct {
	buf   []int32
	start int // index of the oldest element
	size  int
}

func newRing(capacity int) ring { return ring{buf: make([]int32, capacity)} }

func (r *ring) capacity() int { return len(r.buf) }

// push appends id, dropping the oldest element when full; it returns the dropped one.
func (r *ring) push(id int32) (dropped int32, didDrop bool) {
	if len(r.buf) == 0 {
		return 0, false
	}
	if r.size == len(r.buf) {
		dropped = r.buf[r.start]
		r.buf[r.start] = id
		r.start = (r.start + 1) % len(r.buf)
		return dropped, true
	}
	r.buf[(r.start+r.size)%len(r.buf)] = id
	r.size++
	return 0, false
}

// front returns the oldest element.
func (r *ring) front() int32 { return r.buf[r.start] }

// rat is reverse access: rat(0) is the newest element.
func (r *ring) rat(i int) int32 {
	return r.buf[(r.start+r.size-1-i)%len(r.buf)]
}

// at is forward access: at(0) is the oldest element.
func (r *ring) at(i int) int32 { return r.buf[(r.start+i)%len(r.buf)] }

func (r *ring) clear() { r.start, r.size = 0, 0 }

func (r ring) clone() ring {
	return ring{buf: append([]int32(nil), r.buf...), start: r.start, size: r.size}
}

// growCounts makes counts long enough to index id.
func growCounts(counts []int32, id int32) []int32 {
	if int(id) < len(counts) {
		return counts
	}
	n := 2 * len(counts)
	if n < int(id)+1 {
		n = int(id) + 1
	}
	if n < 1024 {
		n = 1024
	}
	grown := make([]int32, n)
	copy(grown, counts)
	return grown
}
