package schema

import (
	"errors"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// itemSchemas are the schemas of an array's items: prefixItems, then items
// (true when absent).
func itemSchemas(o *object) (prefix []any, items any) {
	if pv, ok := o.get("prefixItems"); ok {
		prefix, _ = pv.([]any)
	}
	items, ok := o.get("items")
	if !ok {
		items = true
	}
	return prefix, items
}

// itemState is a state of an automaton that reads an array's items
// (arrayContainsExpr, arrayUniqueExpr): n items written so far, capped where
// more no longer matters, and a key of the caller's (matches counted, values
// used, ...).
type itemState struct {
	n   int
	key uint64
}

// itemEdge writes one more item, expr, and goes to state to.
type itemEdge struct {
	expr string
	to   itemState
}

// errItemStates: itemsGrammar met more states than its limit.
var errItemStates = errors.New("too many item states")

// itemsGrammar writes the array whose items an automaton reads from state
// {0, 0}: next lists the items that may follow in a state, accepts says
// where the array may end. Each state reachable from the start and from which
// the array can still end is one rule; an item after the first is preceded
// by a comma. live is false when the start state cannot end (no array
// qualifies); err is errItemStates past maxStates states, or next's error.
func (c *conv) itemsGrammar(hint string, maxStates int, next func(itemState) ([]itemEdge, error),
	accepts func(itemState) bool) (expr string, live bool, err error) {
	start := itemState{}
	edges := map[itemState][]itemEdge{}
	into := map[itemState][]itemState{} // reversed edges
	order := []itemState{start}
	seen := map[itemState]bool{start: true}
	for i := 0; i < len(order); i++ {
		if i+1 > maxStates {
			return "", false, errItemStates
		}
		st := order[i]
		es, err := next(st)
		if err != nil {
			return "", false, err
		}
		for _, e := range es {
			if e.expr == "" {
				continue // nothing can be written there
			}
			edges[st] = append(edges[st], e)
			into[e.to] = append(into[e.to], st)
			if !seen[e.to] {
				seen[e.to] = true
				order = append(order, e.to)
			}
		}
	}
	// live: the array can end from there (backwards from the accepting states)
	alive := map[itemState]bool{}
	var work []itemState
	for _, st := range order {
		if accepts(st) {
			alive[st] = true
			work = append(work, st)
		}
	}
	for len(work) > 0 {
		st := work[len(work)-1]
		work = work[:len(work)-1]
		for _, from := range into[st] {
			if !alive[from] {
				alive[from] = true
				work = append(work, from)
			}
		}
	}
	if !alive[start] {
		return "", false, nil
	}
	names := map[itemState]string{}
	for _, st := range order {
		if alive[st] {
			names[st] = c.b.reserve(hint)
		}
	}
	ws := c.ws()
	for _, st := range order {
		if !alive[st] {
			continue
		}
		var alts []string
		for _, e := range edges[st] {
			if !alive[e.to] {
				continue
			}
			if st.n == 0 {
				alts = append(alts, seq(e.expr, ws, names[e.to]))
			} else {
				alts = append(alts, seq(litComma, ws, e.expr, ws, names[e.to]))
			}
		}
		if accepts(st) {
			alts = append(alts, `""`)
		}
		c.b.define(names[st], alt(alts))
	}
	return seq(gbnf.QuoteLiteral("["), ws, names[start], gbnf.QuoteLiteral("]")), true, nil
}
