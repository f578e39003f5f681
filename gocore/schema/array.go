package schema

import (
	"fmt"
	"strconv"

	"github.com/tetherlm/tether/gocore/gbnf"
)

const maxItemsWritten = 2000

// arrayExpr: prefixItems, items, minItems, maxItems. Item i < len(prefixItems)
// follows prefixItems[i], later ones items (absent: any value, false: none).
func (c *conv) arrayExpr(o *object, ptr, hint string) (string, error) {
	minI, err := c.countKeyword(o, "minItems", ptr, 0)
	if err != nil {
		return "", err
	}
	maxI, err := c.countKeyword(o, "maxItems", ptr, -1)
	if err != nil {
		return "", err
	}
	if maxI >= 0 && maxI < minI {
		return "", c.unsatf("maxItems", ptr, "maxItems %d is less than minItems %d", maxI, minI)
	}
	if minI > maxItemsWritten {
		return "", c.errorf("minItems", ptr, "minItems %d is larger than %d, the most a grammar here may require", minI, maxItemsWritten)
	}
	if maxI > maxItemsWritten {
		// narrower, still sound, and said so
		c.noteNarrowed("maxItems", ptr, fmt.Sprintf("maxItems %d is above %d, the most items a grammar here counts: longer arrays are refused", maxI, maxItemsWritten))
		maxI = maxItemsWritten
	}
	if o.val("uniqueItems") == true && (maxI < 0 || maxI > 1) {
		if !o.has("contains") {
			x, ok, err := c.arrayUniqueExpr(o, ptr, hint, minI, maxI)
			if err != nil || ok {
				return x, err
			}
		}
		if err := c.unsupported("uniqueItems", ptr, "uniqueItems is enforced only where the items can be finitely many values "+
			"(enum, const, booleans, null, a small integer range), at most 64, and without contains"); err != nil {
			return "", err
		}
	}
	if o.has("contains") {
		return c.arrayContainsExpr(o, ptr, hint, minI, maxI)
	}
	var prefix []any
	if pv, ok := o.get("prefixItems"); ok {
		prefix, _ = pv.([]any)
	}
	k := len(prefix)
	if maxI >= 0 && k > maxI {
		k = maxI
	}
	var pexprs []string
	ended := false // an item of the prefix matches nothing: the array ends before it
	for i := 0; i < k; i++ {
		x, err := c.visit(prefix[i], ptr+"/prefixItems/"+strconv.Itoa(i), hint+"-"+strconv.Itoa(i))
		if err != nil {
			if isUnsat(err) && i >= minI {
				k, ended = i, true
				break
			}
			return "", err
		}
		pexprs = append(pexprs, x)
	}
	// the rest: items after the prefix
	restLo, restHi := max(0, minI-k), -1
	if maxI >= 0 {
		restHi = maxI - k
	}
	rest := ""
	items, hasItems := o.get("items")
	if ended || hasItems && items == false {
		restHi = 0
	} else if restHi != 0 {
		if !hasItems {
			items = true
		}
		x, err := c.visit(items, ptr+"/items", hint+"-item")
		if err != nil {
			if !isUnsat(err) {
				return "", err
			}
			restHi = 0
		} else {
			rest = x
		}
	}
	if restHi == 0 && restLo > 0 {
		return "", c.unsatf("minItems", ptr, "minItems %d needs more items than the schema allows", minI)
	}
	ws := c.ws()
	comma := seq(litComma, ws)
	// tail(i): what may follow after i items have been written (i >= 1)
	var tail func(i int) string
	tail = func(i int) string {
		if i >= k {
			if restHi == 0 {
				return ""
			}
			return repeat(seq(comma, rest, ws), restLo, restHi)
		}
		x := seq(comma, pexprs[i], ws, tail(i+1))
		if i >= minI {
			return opt(x)
		}
		return group(x)
	}
	var body string
	switch {
	case k > 0:
		body = seq(pexprs[0], ws, tail(1))
		if minI == 0 {
			body = opt(body)
		}
	case restHi == 0:
		body = ""
	default:
		hi := restHi
		if hi > 0 {
			hi--
		}
		body = seq(rest, ws, repeat(seq(comma, rest, ws), max(restLo-1, 0), hi))
		if restLo == 0 {
			body = opt(body)
		}
	}
	return c.named(hint, seq(gbnf.QuoteLiteral("["), ws, body, gbnf.QuoteLiteral("]"))), nil
}
