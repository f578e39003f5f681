package tokenmask_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/tokenmask"
)

// TestMaskAgainstMap checks every operation against a map-based set over vocabulary
// sizes that are, and are not, multiples of 32 and 64, with ids out of range.
func TestMaskAgainstMap(t *testing.T) {
	for _, size := range []int{0, 1, 31, 32, 33, 63, 64, 65, 128257, 151936} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(size)))
			m := tokenmask.New(size)
			require.Len(t, m, (size+31)/32)
			assert.Equal(t, len(m), tokenmask.Words(size))
			want := map[int]bool{}
			for range 4 * (size + 8) {
				id := r.Intn(len(m)*32+40) - 20 // some ids out of range
				if r.Intn(3) == 0 {
					m.Unset(id)
					delete(want, id)
				} else {
					m.Set(id)
					if id >= 0 && id < len(m)*32 {
						want[id] = true
					}
				}
			}
			for id := -40; id < len(m)*32+40; id++ {
				require.Equal(t, want[id], m.Has(id), "id %d", id)
			}
			assert.Equal(t, len(want), m.Count())
			assert.Equal(t, len(want) > 0, m.Any())
			ids := m.IDs(nil)
			require.Len(t, ids, len(want))
			for i, id := range ids {
				assert.True(t, want[int(id)])
				if i > 0 {
					assert.Less(t, ids[i-1], id)
				}
			}
			m.Reset()
			assert.Zero(t, m.Count())
			assert.False(t, m.Any())
		})
	}
}

func TestMaskFillClearFromOr(t *testing.T) {
	for _, tc := range []struct{ size, fill, clearFrom, want int }{
		{100, 100, 100, 100},
		{100, 50, 100, 50},
		{100, 100, 33, 33},
		{100, 64, 32, 32},
		{100, 1000, 1000, 128}, // a fill past the end stops at the mask's 4 words
		{100, -5, 0, 0},
		{65, 65, 64, 64},
	} {
		t.Run(fmt.Sprint(tc), func(t *testing.T) {
			m := tokenmask.New(tc.size)
			m.Fill(tc.fill)
			m.ClearFrom(tc.clearFrom)
			assert.Equal(t, tc.want, m.Count())
			for id := 0; id < len(m)*32; id++ {
				assert.Equal(t, id < tc.want, m.Has(id), "id %d", id)
			}
		})
	}
	a, b := tokenmask.New(70), tokenmask.New(40)
	a.Set(1)
	b.Set(2)
	b.Set(39)
	a.Or(b)
	assert.Equal(t, []int32{1, 2, 39}, a.IDs(nil))
	b.Or(a) // the shorter mask keeps its own width
	assert.Equal(t, []int32{1, 2, 39}, b.IDs(nil))
}

func ExampleMask() {
	m := tokenmask.New(50) // token ids 0..49: two 32-bit words
	m.Set(3)
	m.Set(40)
	m.Set(99) // outside the mask: ignored
	fmt.Println(len(m), m.Count(), m.Has(40), m.Has(41), m.IDs(nil))
	// Output: 2 2 true false [3 40]
}

// TestMaskOrEveryAlignment checks Or against a word-by-word OR for masks of many
// lengths whose words start 8-byte aligned or not (a row of odd index in an
// int32 matrix, a mask sliced one word in), each with the other's alignment and
// with different lengths: Or takes two words at a time only where both are
// aligned, and must give the same words either way and leave words past the
// shorter mask alone.
func TestMaskOrEveryAlignment(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	random := func(n int) []uint32 {
		w := make([]uint32, n)
		for i := range w {
			w[i] = r.Uint32()
		}
		return w
	}
	for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 10, 17, 4008, 4009} {
		for _, extra := range []int{0, 1, 5} {
			for _, offDst := range []int{0, 1} {
				for _, offSrc := range []int{0, 1} {
					t.Run(fmt.Sprint(n, extra, offDst, offSrc), func(t *testing.T) {
						dstBuf, srcBuf := random(n+extra+1), random(n+1)
						dst := tokenmask.Mask(dstBuf[offDst : offDst+n+extra])
						src := tokenmask.Mask(srcBuf[offSrc : offSrc+n])
						want := append([]uint32(nil), dstBuf...)
						for i := range n {
							want[offDst+i] |= src[i]
						}
						dst.Or(src)
						require.Equal(t, want, dstBuf)
					})
				}
			}
		}
	}
}
