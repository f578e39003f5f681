package engine

// byteSet is a set of bytes: bit b&31 of word b>>5 for byte b. Its underlying type
// is the [8]uint32 the matcher's tables use, so a byteSet is assignable to and
// from one.
type byteSet [8]uint32

// allBytes holds every byte.
var allBytes = byteSet{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}

// has reports whether b is in the set.
func (s *byteSet) has(b byte) bool { return s[b>>5]&(1<<(b&31)) != 0 }

// add puts b in the set.
func (s *byteSet) add(b byte) { s[b>>5] |= 1 << (b & 31) }

// union adds every byte of o to the set.
func (s *byteSet) union(o *byteSet) {
	for k := range s {
		s[k] |= o[k]
	}
}
