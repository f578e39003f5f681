package schema_test

import (
	"errors"
	"math/rand"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/schema"
)

// regexPatterns are converted and cross-checked against Go's regexp.
var regexPatterns = []string{
	`abc`, `a|b|cd`, `a*b+c?`, `(ab){2,3}`, `[a-c]{1,4}x?`, `[^a]b`, `(?i)ab`, `\d{3}-\d{4}`,
	`^a.b$`, `(a|)+b`, `x{0,2}(y|z)*`, `(?s).a`, `[\w.]+@b`, `(?:ab|a)(?:c|bc)`, `a{3}|b{0}`,
	`\x{e9}+é?`, `[[:alpha:]]{2}`, `(a*)*b`, `^$`, `a\.b\*`,
}

// TestFromRegexAgreesWithGo: for each pattern, a random string matches in full
// (regexp.MatchString on ^(?:p)$) exactly when the grammar accepts it.
func TestFromRegexAgreesWithGo(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	alphabet := []rune("abcxyz0129-.@é\nAB*")
	for _, p := range regexPatterns {
		t.Run(p, func(t *testing.T) {
			g, err := schema.FromRegex(p)
			require.NoError(t, err)
			c := newChecker(t, g)
			re := regexp.MustCompile(`^(?:` + p + `)$`)
			for i := 0; i < 300; i++ {
				n := rng.Intn(7)
				rs := make([]rune, n)
				for j := range rs {
					rs[j] = alphabet[rng.Intn(len(alphabet))]
				}
				s := string(rs)
				if i%3 == 0 { // also strings near the language: mutate a match
					if m := sampleMatch(re, rng, alphabet); m != "" {
						s = m
					}
				}
				assert.Equal(t, re.MatchString(s), c.accepts(s), "pattern %q, text %q\n%s", p, s, g)
			}
		})
	}
}

// sampleMatch finds a short matching string by random search (may return "").
func sampleMatch(re *regexp.Regexp, rng *rand.Rand, alphabet []rune) string {
	for k := 0; k < 50; k++ {
		n := rng.Intn(6)
		rs := make([]rune, n)
		for j := range rs {
			rs[j] = alphabet[rng.Intn(len(alphabet))]
		}
		if re.MatchString(string(rs)) {
			return string(rs)
		}
	}
	return ""
}

// TestFromRegexErrors: what a grammar cannot express is refused, saying why.
func TestFromRegexErrors(t *testing.T) {
	cases := map[string]string{
		`a(?=b)`:  "lookaround",
		`(?<!a)b`: "lookaround",
		`(a)\1`:   "backreference",
		`a\bb`:    "word boundar",
		`a^b`:     "start anchor",
		`a$b`:     "end anchor",
		`(a`:      "missing closing",
	}
	for p, want := range cases {
		_, err := schema.FromRegex(p)
		var re *schema.RegexError
		require.True(t, errors.As(err, &re), "%q: %v", p, err)
		assert.Contains(t, err.Error(), want, p)
	}
}
