package session_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tetherlm/tether/gocore/tokenmask"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
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

func compile(t *testing.T, src string) *session.Grammar {
	t.Helper()
	g, err := session.Compile(voc, session.Spec{Src: src})
	require.NoError(t, err)
	return g
}

type sess = session.Session[session.EngineMatcher]

func newSessionMode(t *testing.T, src string, mode session.Mode) *sess {
	t.Helper()
	return session.New(session.FromRoot(compile(t, src).NewMatcher()), voc.IsEOG, mode)
}

func newSession(t *testing.T, src string) *sess { return newSessionMode(t, src, session.Free) }

// mask is row r's mask; it must have no error.
func mask(t *testing.T, s *sess, r int, eog []uint32) []uint32 {
	t.Helper()
	m, err := s.Mask(r, words, eog)
	require.NoError(t, err)
	return m
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

func step(t *testing.T, s *sess, prompt []int64, gens ...[]int64) {
	t.Helper()
	ids, b, n := rows(prompt, gens...)
	require.NoError(t, s.Step(ids, b, n))
}

func TestRowsFollowTheirTokensNotTheirPositions(t *testing.T) {
	s := newSession(t, `root ::= "ab" | "ac" | "xyz"`)
	prompt := []int64{0, 0, 0}
	step(t, s, prompt, nil, nil) // two rows, nothing generated
	assert.Equal(t, "ax", allowedBytes(mask(t, s, 0, eogMask)))

	step(t, s, prompt, toks("a"), toks("x"))
	assert.Equal(t, "bc", allowedBytes(mask(t, s, 0, eogMask)))
	assert.Equal(t, "y", allowedBytes(mask(t, s, 1, eogMask)))

	// Beam search swaps the rows: each row's state comes from its own tokens.
	step(t, s, prompt, toks("xy"), toks("ab"))
	assert.Equal(t, "z", allowedBytes(mask(t, s, 0, eogMask)))
	assert.Equal(t, "", allowedBytes(mask(t, s, 1, eogMask)))
	assert.True(t, allowed(mask(t, s, 1, eogMask), eos), "complete: the end token is allowed")
	assert.False(t, allowed(mask(t, s, 0, eogMask), eos))
	assert.Zero(t, s.Rejected)
}

func TestDuplicateRowsShareState(t *testing.T) {
	s := newSession(t, `root ::= [a-c]+`)
	p := []int64{0}
	step(t, s, p, nil, nil, nil)
	step(t, s, p, toks("a"), toks("a"), toks("b"))
	s.FillAll(words, eogMask, 4)
	m0, m1 := mask(t, s, 0, eogMask), mask(t, s, 1, eogMask)
	assert.Same(t, &m0[0], &m1[0], "rows holding the same tokens share one mask")
	assert.Equal(t, "abc", allowedBytes(mask(t, s, 2, eogMask)))
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
	assert.Equal(t, eogMask, mask(t, s, 0, eogMask))
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
	assert.Equal(t, eogMask, mask(t, s, 1, eogMask), "a dead row is offered only end tokens")
	assert.Equal(t, "b", allowedBytes(mask(t, s, 0, eogMask)))
}

func TestNewPromptsStartOver(t *testing.T) {
	s := newSession(t, `root ::= "ab"`)
	step(t, s, []int64{0, 0}, nil)
	step(t, s, []int64{0, 0}, toks("a"))
	assert.Equal(t, "b", allowedBytes(mask(t, s, 0, eogMask)))
	// generate called again with another prompt of the same length + 1: a new call.
	step(t, s, []int64{0, 1, 0}, nil)
	assert.Equal(t, "a", allowedBytes(mask(t, s, 0, eogMask)))
	// The same prompt again (shorter input than last step) also starts fresh.
	step(t, s, []int64{0, 1, 0}, toks("a"))
	step(t, s, []int64{0, 1, 0}, nil)
	assert.Equal(t, "a", allowedBytes(mask(t, s, 0, eogMask)))
	// A different batch size is a new call too.
	step(t, s, []int64{7}, nil, nil, nil)
	assert.Equal(t, "a", allowedBytes(mask(t, s, 2, eogMask)))
	assert.Equal(t, 4, s.Starts)
}

func TestPromptThatExtendsTheLastPromptStartsOver(t *testing.T) {
	// issue 13: "Answer:" then "Answer: ok". The second prompt begins with the first
	// and is not longer than the last input + 1, yet it is a new call: its last token is
	// not a continuation of a row of the previous step.
	s := newSession(t, `root ::= "ab" | "ok"`)
	prompt := toks("Answer:")
	step(t, s, prompt, nil)
	step(t, s, prompt, toks("a"))
	step(t, s, prompt, toks("ab"))
	step(t, s, append(append([]int64{}, prompt...), tok(' ')), nil) // "Answer: "
	assert.Equal(t, 2, s.Starts)
	assert.Equal(t, "ao", allowedBytes(mask(t, s, 0, eogMask)), "the new call's output starts at the grammar's start")
	// Exactly one token more than the previous step's rows is a continuation.
	step(t, s, append(append([]int64{}, prompt...), tok(' ')), toks("o"))
	assert.Equal(t, 2, s.Starts)
	assert.Equal(t, "k", allowedBytes(mask(t, s, 0, eogMask)))
}

func TestUnseenHistoryIsReplayedInCallMode(t *testing.T) {
	// Assisted decoding checks candidates at several lengths and steps back; a Call
	// session (the host vouches that the steps are one generate call) follows it.
	s := newSessionMode(t, `root ::= "abcd"`, session.Call)
	p := []int64{0}
	step(t, s, p, nil)
	step(t, s, p, toks("a"))
	step(t, s, p, toks("ab"))
	step(t, s, p, toks("abc"))
	step(t, s, p, toks("ab")) // back one
	assert.Equal(t, "c", allowedBytes(mask(t, s, 0, eogMask)))
	step(t, s, p, toks("abc"))
	assert.Equal(t, "d", allowedBytes(mask(t, s, 0, eogMask)))
	step(t, s, p, toks("ab"))
	assert.Zero(t, s.Rejected)
	assert.Equal(t, 1, s.Starts)
	// Rows that do not begin with the call's prompt cannot be a step of the call: a
	// new generation (a LogitsProcessorList reused by hand for another prompt).
	ids, b, n := rows([]int64{1}, toks("ab"))
	require.NoError(t, s.Step(ids, b, n))
	assert.Equal(t, 2, s.Starts)
	assert.Equal(t, "a", allowedBytes(mask(t, s, 0, eogMask)), "the whole input is the new prompt")
}

func TestRowsStartWhereTheirPromptSays(t *testing.T) {
	// The start state depends on the prompt: rows with different prompts do not share
	// states even when they generated the same tokens.
	g := compile(t, `root ::= "ab" | "xy"`)
	root := g.NewMatcher()
	start := func(prompt []int64) (session.EngineMatcher, error) {
		m := root.Clone()
		if prompt[len(prompt)-1] == 1 { // prompt ends with special 1: "a" was already said
			require.NoError(t, m.AcceptToken(voc.ByteToken('a')))
		}
		return m, nil
	}
	s := session.New(start, voc.IsEOG, session.Free)
	require.NoError(t, s.Step([]int64{0, 1}, 2, 1))
	assert.Equal(t, "ax", allowedBytes(mask(t, s, 0, eogMask)))
	assert.Equal(t, "b", allowedBytes(mask(t, s, 1, eogMask)))
}

func TestDeadEndIsAnError(t *testing.T) {
	// A finished row with no end token to offer would get a mask of all -inf.
	s := newSession(t, `root ::= "a"`)
	p := []int64{0}
	step(t, s, p, nil)
	step(t, s, p, []int64{eos})
	_, err := s.Mask(0, words, make([]uint32, words))
	var de *session.DeadEndError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, 0, de.Row)
}

// limitMatcher is a Matcher whose masks always hit a limit.
type limitMatcher struct{}

func (limitMatcher) AcceptToken(int) error { return nil }
func (limitMatcher) FillMask(m tokenmask.Mask) error {
	return &engine.LimitError{Limit: "stacks", Value: 1}
}
func (limitMatcher) Clone() limitMatcher { return limitMatcher{} }

func TestLimitErrorReachesTheCaller(t *testing.T) {
	s := session.New(session.FromRoot(limitMatcher{}), voc.IsEOG, session.Free)
	require.NoError(t, s.Step([]int64{0}, 1, 1))
	_, err := s.Mask(0, words, eogMask)
	var le *engine.LimitError
	require.ErrorAs(t, err, &le)

	// The same through the real engine: a grammar whose stacks grow with every "x"
	// under a small stack limit. The mask that would need more stacks is an error,
	// never a mask that leaves tokens out.
	g, err := session.Compile(voc, session.Spec{Src: ambiguous, MaxStacks: 64})
	require.NoError(t, err)
	m := g.NewMatcher()
	buf := make([]uint32, words)
	for i := 0; i < 12 && err == nil; i++ {
		if err = m.FillMask(buf); err == nil {
			err = m.AcceptToken(voc.ByteToken('x'))
		}
	}
	require.ErrorAs(t, err, &le, "the limit is reached within 12 steps, as a LimitError")
	assert.Equal(t, 64, le.Value)

	// A session stepping into that state fails instead of calling the row dead.
	s2 := session.New(session.FromRoot(g.NewMatcher()), voc.IsEOG, session.Free)
	var stepErr error
	for n := 0; n <= 12 && stepErr == nil; n++ {
		ids, b, l := rows([]int64{0}, toks(strings.Repeat("x", n)))
		if stepErr = s2.Step(ids, b, l); stepErr == nil {
			_, stepErr = s2.Mask(0, words, eogMask)
		}
	}
	require.ErrorAs(t, stepErr, &le)
	assert.Zero(t, s2.Rejected, "a limit is not a rejected token")
}

// ambiguous keeps 8 more stacks with every "x": each level opened so far may close
// in 8 ways next, each at its own grammar position (stacks that share a position are
// merged into one, so only distinct positions count against the limit).
var ambiguous = func() string {
	var b strings.Builder
	b.WriteString("root ::= l0\n")
	for i := 0; i < 15; i++ {
		fmt.Fprintf(&b, "l%d ::= \"x\" l%d? (\"y\" | \"yy\" | \"yyy\" | \"yyyy\" | \"z\" | \"zz\" | \"zzz\" | \"zzzz\")?\n", i, i+1)
	}
	b.WriteString("l15 ::= \"x\"\n")
	return b.String()
}()

func TestBadShape(t *testing.T) {
	s := newSession(t, `root ::= "a"`)
	assert.Error(t, s.Step([]int64{1, 2, 3}, 2, 2))
	assert.Error(t, s.Step(nil, 0, 0))
}
