package engine

import "fmt"

// LimitError says that the engine could not keep its exactness promise because a
// resource limit was reached (stacks in one state, work per step, memory). It is
// returned instead of a mask or a decision: a caller that gets it must not use the
// mask it asked for. It is never a bug: a grammar that hits it is legal but too
// costly to follow under the configured limits.
type LimitError struct {
	Limit string // which limit: "stacks", "work", "memory", ...
	Value int    // the configured limit
	Need  int    // what the state needed (at least), 0 if unknown
	Where string // the rule or position involved, if known
	Msg   string // a sentence for the user: what to change
}

// Error formats the error as "engine: limit <limit> (<value>) reached ...".
func (e *LimitError) Error() string {
	s := fmt.Sprintf("engine: limit %s (%d) reached", e.Limit, e.Value)
	if e.Need > 0 {
		s += fmt.Sprintf(": needs at least %d", e.Need)
	}
	if e.Where != "" {
		s += " at " + e.Where
	}
	if e.Msg != "" {
		s += "; " + e.Msg
	}
	return s
}
