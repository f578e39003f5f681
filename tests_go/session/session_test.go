package session_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/session"
)

// A byte vocabulary: ids 0..1 special (id 1 ends generation), then one id per byte.
var voc = engine.ByteVocabulary{Specials: 2, EOG: 2}

const eos = 1

func tok(b byte) int64 { return int64(voc.ByteToken(b)) }

func toks(s string) []int64 {
	out := make([]int64, len(s))
	for i := range s {
		out[i] = tok(s[i])
	}
	return out
}

func newSession(t *testing.T, src string) *session.Session[*engine.Matcher] {
	t.Helper()
	g, err := gbnf.Parse(src)
	require.NoError(t, err)
	cg, err := engine.Compile(g, voc)
	require.NoError(t, err)
	return session.New(cg.NewMatcher(), voc.IsEOG)
}

// rows builds a row-major id matrix from a prompt and each row's generated text.
func rows(prompt []int64, gens ...[]int64) ([]int64, int, int) {
	n := len(prompt) + len(gens[0])
	ids := make([]int64, 0, len(gens)*n)
	for _, g := range gens {
		if len(prompt)+len(g) != n {
			panic("rows must have equal length")
		}
		ids = append(append(ids, prompt...), g...)
	}
	return ids, len(gens), n
}

// must returns the mask, panicking on a mask error (these test matchers have none).
func must(mask []uint32, err error) []uint32 {
	if err != nil {
		panic(err)
	}
	return mask
}

func allowed(mask []uint32, id int) bool { return mask[id/32]&(1<<(id%32)) != 0 }

func allowedBytes(mask []uint32) string {
	var s []byte
	for b := 0; b < 256; b++ {
		if allowed(mask, voc.ByteToken(byte(b))) {
			s = append(s, byte(b))
		}
	}
	return string(s)
}

var words = (voc.Size() + 31) / 32
var eogMask = func() []uint32 {
	m := make([]uint32, words)
	m[eos/32] |= 1 << (eos % 32)
	return m
}()

func step(t *testing.T, s *session.Session[*engine.Matcher], prompt []int64, gens ...[]int64) {
	t.Helper()
	ids, b, n := rows(prompt, gens...)
	require.NoError(t, s.Step(ids, b, n))
}

func TestRowsFollowTheirTokensNotTheirPositions(t *testing.T) {
	s := newSession(t, `root ::= "ab" | "ac" | "xyz"`)
	prompt := []int64{0, 0, 0}
	step(t, s, prompt, nil, nil) // two rows, nothing generated
	assert.Equal(t, "ax", allowedBytes(must(s.Mask(0, words, eogMask))))

	step(t, s, prompt, toks("a"), toks("x"))
	assert.Equal(t, "bc", allowedBytes(must(s.Mask(0, words, eogMask))))
	assert.Equal(t, "y", allowedBytes(must(s.Mask(1, words, eogMask))))

	// Beam search swaps the rows: each row's state comes from its own tokens.
	step(t, s, prompt, toks("xy"), toks("ab"))
	assert.Equal(t, "z", allowedBytes(must(s.Mask(0, words, eogMask))))
	assert.Equal(t, "", allowedBytes(must(s.Mask(1, words, eogMask))))
	assert.True(t, allowed(must(s.Mask(1, words, eogMask)), eos), "complete: the end token is allowed")
	assert.False(t, allowed(must(s.Mask(0, words, eogMask)), eos))
	assert.Zero(t, s.Rejected)
}

func TestDuplicateRowsShareState(t *testing.T) {
	s := newSession(t, `root ::= [a-c]+`)
	p := []int64{0}
	step(t, s, p, nil, nil, nil)
	step(t, s, p, toks("a"), toks("a"), toks("b"))
	s.FillAll(words, eogMask, 4)
	m0, m1 := must(s.Mask(0, words, eogMask)), must(s.Mask(1, words, eogMask))
	assert.Same(t, &m0[0], &m1[0], "rows holding the same tokens share one mask")
	assert.Equal(t, "abc", allowedBytes(must(s.Mask(2, words, eogMask))))
}

func TestFinishedRowsOnlyEnd(t *testing.T) {
	s := newSession(t, `root ::= "a"+`)
	p := []int64{0}
	step(t, s, p, nil)
	step(t, s, p, toks("a"))
	step(t, s, p, []int64{tok('a'), eos})
	assert.True(t, s.Row(0).Finished)
	// The host pads finished rows; padding is not fed to the grammar.
	step(t, s, p, []int64{tok('a'), eos, 0})
	assert.True(t, s.Row(0).Finished)
	assert.Equal(t, eogMask, must(s.Mask(0, words, eogMask)))
	assert.Zero(t, s.Rejected)
}

func TestRejectedTokenKillsOnlyThatRow(t *testing.T) {
	s := newSession(t, `root ::= "ab"`)
	p := []int64{0}
	step(t, s, p, nil, nil)
	step(t, s, p, toks("a"), toks("z"))
	assert.False(t, s.Row(0).Dead)
	assert.True(t, s.Row(1).Dead)
	require.Error(t, s.Row(1).Err)
	assert.Equal(t, 1, s.Rejected)
	assert.Equal(t, eogMask, must(s.Mask(1, words, eogMask)), "a dead row is offered only end tokens")
	assert.Equal(t, "b", allowedBytes(must(s.Mask(0, words, eogMask))))
}

func TestNewPromptsStartOver(t *testing.T) {
	s := newSession(t, `root ::= "ab"`)
	step(t, s, []int64{0, 0}, nil)
	step(t, s, []int64{0, 0}, toks("a"))
	assert.Equal(t, "b", allowedBytes(must(s.Mask(0, words, eogMask))))
	// generate called again with another prompt of the same length + 1: a new call.
	step(t, s, []int64{0, 1, 0}, nil)
	assert.Equal(t, "a", allowedBytes(must(s.Mask(0, words, eogMask))))
	// The same prompt again (shorter input than last step) also starts fresh.
	step(t, s, []int64{0, 1, 0}, toks("a"))
	step(t, s, []int64{0, 1, 0}, nil)
	assert.Equal(t, "a", allowedBytes(must(s.Mask(0, words, eogMask))))
	// A different batch size is a new call too.
	step(t, s, []int64{7}, nil, nil, nil)
	assert.Equal(t, "a", allowedBytes(must(s.Mask(2, words, eogMask))))
}

func TestUnseenHistoryIsReplayed(t *testing.T) {
	// Assisted decoding checks candidates at several lengths and steps back.
	s := newSession(t, `root ::= "abcd"`)
	p := []int64{0}
	step(t, s, p, nil)
	step(t, s, p, toks("a"))
	step(t, s, p, toks("ab"))
	step(t, s, p, toks("abc"))
	step(t, s, p, toks("ab")) // back one
	assert.Equal(t, "c", allowedBytes(must(s.Mask(0, words, eogMask))))
	step(t, s, p, toks("abc"))
	assert.Equal(t, "d", allowedBytes(must(s.Mask(0, words, eogMask))))
	assert.Zero(t, s.Rejected)
}

func TestBadShape(t *testing.T) {
	s := newSession(t, `root ::= "a"`)
	assert.Error(t, s.Step([]int64{1, 2, 3}, 2, 2))
	assert.Error(t, s.Step(nil, 0, 0))
}
