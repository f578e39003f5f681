package schema

import (
	"encoding/json"
	"math/big"
	"strconv"
)

// Limits of uniqueItems over finite item domains.
const (
	// maxUniqueExact is the largest domain whose arrays are written in any
	// order (one rule per set of values used: 2^n).
	maxUniqueExact = 10
	// maxUniqueDomain is the largest domain written at all; above
	// maxUniqueExact the values must come in the order the schema lists them.
	maxUniqueDomain = 64
	// maxUniqueStates bounds the rules of one array.
	maxUniqueStates = 8192
)

// arrayUniqueExpr writes an array with uniqueItems: true whose items can only
// be finitely many values (enum/const, booleans, null, a small integer
// range), together with prefixItems, items, minItems and maxItems. ok is
// false when an item's values are not finite (the caller refuses).
//
// The values form one list (first seen first). With at most maxUniqueExact of
// them the array is read by an automaton whose state is (items written, set of
// values used): exact. With more, each item must come later in that list than
// the one before: a sound narrowing (every such array has distinct items),
// listed in the returned ignored keywords with Narrowed set, whose grammar is
// linear in the number of values.
func (c *conv) arrayUniqueExpr(o *object, ptr, hint string, minI, maxI int) (string, bool, error) {
	prefix, items := itemSchemas(o)
	// slot s: prefixItems[s], or items for s == len(prefix); nil: no item there
	var domain []any
	index := map[string]int{} // valueKey -> position in domain
	slotVals := make([][]int, len(prefix)+1)
	for s := 0; s <= len(prefix); s++ {
		sch := items
		if s < len(prefix) {
			sch = prefix[s]
		}
		if s == len(prefix) && maxI >= 0 && maxI <= len(prefix) {
			break // no item after the prefix
		}
		vals, ok := c.finiteValues(sch)
		if !ok {
			return "", false, nil
		}
		for _, v := range vals {
			k := valueKey(v)
			i, seen := index[k]
			if !seen {
				if len(domain) == maxUniqueDomain {
					return "", false, nil // too many values to write
				}
				i = len(domain)
				index[k] = i
				domain = append(domain, v)
			}
			slotVals[s] = append(slotVals[s], i)
		}
	}
	exact := len(domain) <= maxUniqueExact
	if !exact {
		c.noteNarrowed("uniqueItems", ptr, "the "+strconv.Itoa(len(domain))+" possible items (more than "+
			strconv.Itoa(maxUniqueExact)+") must come in the order the schema lists them")
	}
	slot := func(n int) []int {
		if n < len(prefix) {
			return slotVals[n]
		}
		return slotVals[len(prefix)]
	}
	// n: items written, capped where more no longer matters (a slot after the
	// prefix and minItems); key: the set of values used (exact) or 1 + the
	// last value's index (ordered)
	nCap := max(len(prefix), minI, 1)
	if maxI >= 0 {
		nCap = min(maxI, len(prefix)+len(domain))
	}
	lits := make([]string, len(domain))
	for i, v := range domain {
		lits[i] = c.literal(v)
	}
	next := func(st itemState) ([]itemEdge, error) {
		if maxI >= 0 && st.n >= maxI {
			return nil, nil
		}
		var es []itemEdge
		for _, v := range slot(st.n) {
			key := uint64(v + 1) // ordered: 1 + the last value's index
			if exact {
				if st.key&(1<<v) != 0 {
					continue
				}
				key = st.key | 1<<v
			} else if key <= st.key {
				continue
			}
			es = append(es, itemEdge{lits[v], itemState{min(st.n+1, nCap), key}})
		}
		return es, nil
	}
	x, live, err := c.itemsGrammar(hint+"-u", maxUniqueStates, next, func(st itemState) bool { return st.n >= minI })
	if err == errItemStates {
		return "", true, c.unsupported("uniqueItems", ptr, "these unique items need more than "+strconv.Itoa(maxUniqueStates)+" grammar states")
	}
	if err != nil {
		return "", true, err
	}
	if !live {
		return "", true, c.unsatf("uniqueItems", ptr, "no array of distinct items satisfies the item limits")
	}
	return c.named(hint, x), true, nil
}

// maxFiniteRange is the widest integer range finiteValues lists.
const maxFiniteRange = 64

// finiteValues lists the values schema s accepts when they are finitely many
// and each is decided by checkConst (ok false otherwise).
func (c *conv) finiteValues(s any) ([]any, bool) {
	switch s := s.(type) {
	case bool:
		return nil, !s
	case *object:
		f, err := c.flatten(s, "", 0)
		if err != nil {
			if isUnsat(err) {
				return nil, true
			}
			return nil, false
		}
		cands, ok := c.constValues(f)
		if !ok {
			tl := typeList(f.val("type"))
			if tl == nil {
				return nil, false
			}
			for _, t := range tl {
				switch t {
				case "boolean":
					cands = append(cands, true, false)
				case "null":
					cands = append(cands, nil)
				case "integer":
					lo, hi, ok := intRange(f)
					if !ok || lo == nil || hi == nil || new(big.Int).Sub(hi, lo).Cmp(big.NewInt(maxFiniteRange)) >= 0 {
						return nil, false
					}
					for x := new(big.Int).Set(lo); x.Cmp(hi) <= 0; x.Add(x, big.NewInt(1)) {
						cands = append(cands, json.Number(x.String()))
					}
				default:
					return nil, false
				}
			}
		}
		rest := f // the candidates are f's enum/const values: check the rest of f
		if ok {
			rest = f.clone()
			rest.del("enum")
			rest.del("const")
		}
		var out []any
		for _, v := range cands {
			ok, decided := c.checkConst(v, rest, 0)
			if !decided {
				return nil, false
			}
			if ok {
				out = append(out, v)
			}
		}
		return out, true
	}
	return nil, false
}

// intRange is o's integer range [lo, hi] from its bounds (nil: unbounded
// there), ok false when a bound is not an integer.
func intRange(o *object) (lo, hi *big.Int, ok bool) {
	rs, ok := rawBounds(o)
	for _, r := range rs {
		ok = ok && (r == nil || r.IsInt())
	}
	if !ok {
		return nil, nil, false
	}
	rlo, loExcl, _, rhi, hiExcl, _ := tighterBounds(rs)
	if rlo != nil {
		lo = new(big.Int).Set(rlo.Num())
		if loExcl {
			lo.Add(lo, big.NewInt(1))
		}
	}
	if rhi != nil {
		hi = new(big.Int).Set(rhi.Num())
		if hiExcl {
			hi.Sub(hi, big.NewInt(1))
		}
	}
	return lo, hi, true
}
