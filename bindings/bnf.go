package bindings

import (
	"encoding/json"

	"github.com/tetherlm/tether/gocore/safecall"
)

// MatcherPossibleTokens returns, as a JSON list, the token ids allowed next; with
// longestOnly, bnf_sampler's listing (engine.Matcher.PossibleTokens).
func MatcherPossibleTokens(h int64, longestOnly bool) (string, error) {
	return safecall.Do("MatcherPossibleTokens", func() (string, error) {
		m, err := matchers.get(h)
		if err != nil {
			return "", err
		}
		ids, err := m.PossibleTokens(longestOnly)
		if err != nil {
			return "", err
		}
		if ids == nil {
			ids = []int{}
		}
		b, err := json.Marshal(ids)
		return string(b), err
	})
}
