package engine_test

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/gbnf"
)

// arithLeft is the arithmetic grammar with left-recursive expr and term (issue 17);
// arithRight is the same language written without left recursion.
const arithLeft = `root ::= expr
expr ::= expr "+" term | expr "-" term | term
term ::= term "*" factor | term "/" factor | factor
factor ::= "(" expr ")" | [0-9]+ | " " factor
`

const arithRight = `root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= "(" expr ")" | [0-9]+ | " " factor
`

// The left-recursive grammars and a right-recursive equivalent of each: every string
// over the alphabet up to the length is accepted by both or by neither, and both can
// end after the same ones.
var leftRecCases = []struct {
	name, left, right, alphabet string
	maxLen                      int
}{
	{"arithmetic", arithLeft, arithRight, "1+*()", 6},
	{"direct", `root ::= root "a" | "b"`, `root ::= "b" "a"*`, "ab", 7},
	{"direct, several", `root ::= root "a" | root "bc" | "x" | "y"`, `root ::= ("x" | "y") ("a" | "bc")*`, "abcxy", 5},
	{"indirect", "root ::= a\na ::= b \"x\" | \"y\"\nb ::= a \"z\" | \"w\"", `root ::= ("y" | "wx") ("zx")*`, "wxyz", 7},
	{"through a nullable prefix", "root ::= a\na ::= e a \"x\" | \"y\"\ne ::= \"e\" |", "root ::= a\na ::= \"e\" a \"x\" | \"y\" \"x\"*", "exy", 6},
	{"inside a repetition", `root ::= (root "a")*`, `root ::= "a"*`, "ab", 6},
	{"nullable base", `root ::= root "a" | `, `root ::= "a"*`, "ab", 6},
	{"mutual, with nullable", "root ::= a \"!\"\na ::= b \"+\" | \"1\" | \"\"\nb ::= a \"-\" | a", `root ::= (("1" | ) ("-"? "+")*) "!"`, "1+-!", 6},
	{"through a nullable counter", `root ::= [a]{0,100} root "x" | "y"`, `root ::= [a]{1,100} root "x" | "y" "x"*`, "axy", 7},
	{"llama.cpp hardest", "root ::= asdf\nasdf ::= \"a\" | foo \"b\"\nfoo ::= \"c\" | empty asdf \"d\" | \"e\"\nempty ::= \"blah\" | ", "", "abcdehl", 0},
}

func TestLeftRecursionRewriteKeepsLanguage(t *testing.T) {
	v := engine.ByteVocabulary{}
	for _, tc := range leftRecCases {
		t.Run(tc.name, func(t *testing.T) {
			gl := compile(t, tc.left, v)
			if tc.right == "" {
				require.NoError(t, gl.NewMatcher().FillMask(make([]uint32, (v.Size()+31)/32)))
				return
			}
			right := tc.right
			gr := compile(t, right, v)
			var rec func(prefix string)
			count := 0
			rec = func(prefix string) {
				ml, mr := gl.NewMatcher(), gr.NewMatcher()
				el := ml.AcceptBytes([]byte(prefix))
				er := mr.AcceptBytes([]byte(prefix))
				require.Equal(t, er == nil, el == nil, "prefix %q: left %v, right %v", prefix, el, er)
				if el != nil {
					return
				}
				count++
				require.Equal(t, mr.CanEnd(), ml.CanEnd(), "can end after %q", prefix)
				if len(prefix) == tc.maxLen {
					return
				}
				for i := 0; i < len(tc.alphabet); i++ {
					rec(prefix + tc.alphabet[i:i+1])
				}
			}
			rec("")
			require.Greater(t, count, tc.maxLen, "live prefixes checked")
		})
	}
}

// A cycle with no way out still cannot be rewritten: the error names it.
func TestLeftRecursionWithoutBaseIsRefused(t *testing.T) {
	_, err := gbnf.Parse(`root ::= root "a"`)
	require.Error(t, err)
	require.Contains(t, err.Error(), "left recursion: root -> root")
}

// The arithmetic grammar with left-recursive expr and term: on random walks with
// the Llama-3 vocabulary, its masks equal those of the right-recursive grammar, and
// each equals the per-token brute-force verdicts.
func TestLeftRecursionArithmeticMasksBruteForce(t *testing.T) {
	if testing.Short() {
		t.Skip("walks the 128k vocabulary")
	}
	v := llama3Vocab(t)
	gl := compile(t, arithLeft, v)
	gr := compile(t, arithRight, v)
	words := (v.Size() + 31) / 32
	maskL, maskR := make([]uint32, words), make([]uint32, words)
	r := rand.New(rand.NewSource(17))
	for walk := 0; walk < 3; walk++ {
		ml, mr := gl.NewMatcher(), gr.NewMatcher()
		for step := 0; step < 8; step++ {
			require.NoError(t, ml.FillMask(maskL))
			require.NoError(t, mr.FillMask(maskR))
			require.Equal(t, maskR, maskL, "walk %d step %d: masks differ", walk, step)
			if step%3 == 0 {
				bad := bruteForceDisagreements(ml, v, maskL, nil, false)
				require.Empty(t, bad, "walk %d step %d", walk, step)
			}
			allowed, err := ml.AllowedTokens(nil)
			require.NoError(t, err)
			require.NotEmpty(t, allowed)
			next := allowed[r.Intn(len(allowed))]
			if v.IsEOG(next) {
				break
			}
			require.NoError(t, ml.AcceptToken(next))
			require.NoError(t, mr.AcceptToken(next))
		}
	}
}

// gbnf.AssumeNoLeftRecursion leaves left recursion as written (no rewrite); the
// engine refuses it then, with an error, rather than run it.
func TestAssumeNoLeftRecursionIsCaughtByTheEngine(t *testing.T) {
	src := "root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]\n"
	rewritten, err := gbnf.Parse(src)
	require.NoError(t, err)
	_, err = engine.Compile(rewritten, tinyVocab)
	require.NoError(t, err, "the rewritten grammar compiles")
	kept, err := gbnf.Parse(src, gbnf.AssumeNoLeftRecursion())
	require.NoError(t, err)
	assert.Len(t, kept.Rules, 3, "no rule was added by a rewrite")
	_, err = engine.Compile(kept, tinyVocab)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "left recursion")
	// a grammar without left recursion is the same either way
	plain := "root ::= term (\"+\" term)*\nterm ::= [0-9]+\n"
	a, err := gbnf.Parse(plain)
	require.NoError(t, err)
	b, err := gbnf.Parse(plain, gbnf.AssumeNoLeftRecursion())
	require.NoError(t, err)
	assert.Equal(t, a, b)
}
