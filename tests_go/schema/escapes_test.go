package schema_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/schema"
)

// TestPatternClassEscapes judges the spellings the converter gives JSON-special
// code points (the short escapes, and \u00XX in either case for control
// characters), and some that are not JSON at all, against pattern classes that
// take some of the special code points: the grammar must accept a one-character
// string exactly when it is JSON and the code point it spells is in the class.
// The converter writes such a class as its plain characters and the escaped
// spellings of the special ones it takes, factored behind the backslash when
// there are more than two. (The patterns are explicit classes: Go's regexp, the
// oracle here, and ECMA-262, which the converter follows, agree on them.)
func TestPatternClassEscapes(t *testing.T) {
	var spellings []string
	for r := rune(0); r < 0x20; r++ {
		for _, f := range []string{`\u%04x`, `\u%04X`} {
			spellings = append(spellings, fmt.Sprintf(f, r))
		}
	}
	spellings = append(spellings, `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, `\x`, `\u00`, `\u0`, `\`, `\u00g0`, `\u001g`, "\n", "\x01", "a")
	for _, pattern := range []string{
		`^[^\n\r]$`, `^[^\n]$`, `^[\x00-\x10]$`, `^[^\t"]$`, `^[\x01\x1f"\\]$`, `^[^a]$`,
		`^[\x00-\x1f]$`, `^["\\]$`, `^[\n\r\t]$`, `^[\x0a-\x0d\\]$`, `^[\t\n\f\r ]$`, `^[^\x00-\x08\x0e-\x1f]$`,
	} {
		t.Run(pattern, func(t *testing.T) {
			re := regexp.MustCompile(pattern)
			doc, err := json.Marshal(map[string]any{"type": "string", "pattern": pattern})
			require.NoError(t, err)
			g, _, err := schema.FromJSONSchema(doc)
			require.NoError(t, err)
			c := newChecker(t, g)
			for _, sp := range spellings {
				text := `"` + sp + `"`
				var s string
				want := json.Unmarshal([]byte(text), &s) == nil && re.MatchString(s)
				assert.Equal(t, want, c.accepts(text), "pattern %s, string %s", pattern, text)
			}
		})
	}
}
