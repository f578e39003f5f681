package schema

import (
	"strconv"
)

// maxContainsStates bounds the states of the counting automaton
// arrayContainsExpr writes (one rule each).
const maxContainsStates = 4096

// arrayContainsExpr writes an array with "contains" (and minContains,
// maxContains) together with prefixItems, items, minItems and maxItems.
//
// The array's items are read left to right by an automaton whose state is
// (n, j): n items written so far (capped where more no longer matters) and j
// of them matching contains (capped at minContains when maxContains is
// absent). Each state is a rule; from it an item of the slot's schema S
// (prefixItems[n] or items) is written as one of:
//   - without maxContains: S leaving j as it is, or S and contains raising it
//     (an item matching contains may be read either way: the grammar is
//     ambiguous but exact, since some reading counts every match up to
//     minContains);
//   - with maxContains: S and not contains, or S and contains, so j counts
//     exactly; this needs the exact negation of contains (rewriteNot).
//
// The array may end where j >= minContains and n >= minItems. Only states
// reachable from (0, 0) and from which the array can still end are written.
func (c *conv) arrayContainsExpr(o *object, ptr, hint string, minI, maxI int) (string, error) {
	cv, _ := o.get("contains")
	minC, err := c.countKeyword(o, "minContains", ptr, 1)
	if err != nil {
		return "", err
	}
	maxC, err := c.countKeyword(o, "maxContains", ptr, -1)
	if err != nil {
		return "", err
	}
	if maxC >= 0 && maxC < minC {
		return "", c.unsatf("maxContains", ptr, "maxContains %d is less than minContains %d", maxC, minC)
	}
	if minC > maxItemsWritten {
		return "", c.errorf("minContains", ptr, "minContains %d is larger than %d, the most a grammar here may require", minC, maxItemsWritten)
	}
	if maxC > maxItemsWritten {
		maxC = -1 // no array here is longer (maxItemsWritten caps every count)
		if maxI < 0 || maxI > maxItemsWritten {
			c.noteNarrowed("maxItems", ptr, "arrays with contains and a maxContains above "+strconv.Itoa(maxItemsWritten)+" are capped at that many items")
			maxI = maxItemsWritten
		}
	}
	prefix, items := itemSchemas(o)
	var notC any
	if maxC >= 0 {
		nc, ok := c.rewriteNot(cv, 1)
		if ok {
			notC = nc
		} else {
			if err := c.unsupported("maxContains", ptr, "maxContains needs the items that do not match contains, and this contains has no exact negation"); err != nil {
				return "", err
			}
			maxC = -1 // Lenient: maxContains ignored
		}
	}
	// slot s: prefixItems[s] for s < len(prefix), items for s == len(prefix)
	type slot struct {
		any, in, out string // the slot's schema; and contains; and not contains ("": none)
	}
	slots := make([]*slot, len(prefix)+1)
	visitOr := func(s any, p, h string) (string, error) {
		x, err := c.visit(s, p, h)
		if err != nil {
			if isUnsat(err) {
				return "", nil
			}
			return "", err
		}
		return x, nil
	}
	slotAt := func(n int) (*slot, error) {
		si, sch, sp := len(prefix), items, ptr+"/items"
		if n < len(prefix) {
			si, sch, sp = n, prefix[n], ptr+"/prefixItems/"+strconv.Itoa(n)
		}
		if slots[si] != nil {
			return slots[si], nil
		}
		s := &slot{}
		slots[si] = s
		if sch == false {
			return s, nil
		}
		h := hint + "-" + strconv.Itoa(si)
		var err error
		if maxC < 0 {
			if s.any, err = visitOr(sch, sp, h); err != nil {
				return nil, err
			}
		} else if s.out, err = visitOr(allOfSchema(sch, notC), sp, h+"-other"); err != nil {
			return nil, err
		}
		if s.in, err = visitOr(allOfSchema(sch, cv), sp, h+"-match"); err != nil {
			return nil, err
		}
		return s, nil
	}
	// caps: n counts up to maxI, or to where the slots and minItems stop
	// mattering; j up to maxContains, or minContains
	nCap := maxI
	if nCap < 0 {
		nCap = max(len(prefix), minI, 1)
	}
	jCap := maxC
	if jCap < 0 {
		jCap = minC
	}
	if (nCap+1)*(jCap+1) > maxContainsStates {
		if err := c.unsupported("contains", ptr, "counting contains together with the item counts needs more than "+strconv.Itoa(maxContainsStates)+" grammar states"); err != nil {
			return "", err
		}
		rest := o.clone() // Lenient: contains ignored
		for _, k := range []string{"contains", "minContains", "maxContains"} {
			rest.del(k)
		}
		return c.arrayExpr(rest, ptr, hint)
	}
	next := func(st itemState) ([]itemEdge, error) {
		if maxI >= 0 && st.n >= maxI {
			return nil, nil
		}
		sl, err := slotAt(st.n)
		if err != nil {
			return nil, err
		}
		n, j := min(st.n+1, nCap), st.key
		if maxC < 0 {
			es := []itemEdge{{sl.any, itemState{n, j}}}
			if j < uint64(jCap) {
				es = append(es, itemEdge{sl.in, itemState{n, j + 1}})
			}
			return es, nil
		}
		es := []itemEdge{{sl.out, itemState{n, j}}}
		if j < uint64(maxC) {
			es = append(es, itemEdge{sl.in, itemState{n, j + 1}})
		}
		return es, nil
	}
	accepts := func(st itemState) bool { return st.key >= uint64(minC) && st.n >= minI }
	// the state cap above bounds the states (nCap+1)*(jCap+1)
	x, live, err := c.itemsGrammar(hint+"-c", maxContainsStates, next, accepts)
	if err != nil {
		return "", err
	}
	if !live {
		return "", c.unsatf("contains", ptr, "no array has the items contains, minContains and maxContains ask for within the item limits")
	}
	return c.named(hint, x), nil
}
