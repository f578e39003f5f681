package gbnf

import "strings"

// Left recursion.
//
// A rule is left-recursive when it can reach a reference to itself without
// consuming input: directly (a ::= a "x"), through other rules (a ::= b "x",
// b ::= a "y"), or after items that can match the empty string (a ::= e a "x",
// e ::= "e" | ). A top-down matcher expanding such a rule pushes the rest of
// the alternative ("x") each time round, so the expansion never ends. It is
// refused.
//
// A cycle along which nothing is left over is harmless: the matcher returns to
// the state it started from, and a set of states absorbs it. Such cycles arise
// from repeating an item that can be empty, as in llama.cpp's test grammar
// ( [x]* )*, whose helper R ::= S R | reaches R again after an empty S with
// nothing after it. They are accepted, as llama.cpp accepts that grammar.

type leftEdge struct {
	to    int
	grows bool // something follows the reference in its alternative
	site  refSite
}

func checkLeftRecursion(c *compiler) error {
	g := c.g
	edges, comp := leftGraph(g, Nullable(g))
	for r := range edges {
		for _, e := range edges[r] {
			if !e.grows || comp[r] != comp[e.to] {
				continue
			}
			cycle := append([]int{r}, path(edges, comp, e.to, r)...)
			off, ok := c.refOffset(e.site)
			var pos Pos
			if ok {
				pos = c.p.position(off)
			} else {
				pos = g.Rules[r].Pos
			}
			return &Error{Pos: pos, Code: ErrLeftRecursion, Msg: "left recursion: " + cycleNames(c, cycle) +
				": a rule reaches itself again before matching any text (write x ::= x y | z as x ::= z y*)"}
		}
	}
	return nil
}

// components numbers the strongly connected components of the left-edge graph
// (Tarjan's algorithm, iterative so that long helper chains cannot exhaust the
// goroutine stack).
func components(edges [][]leftEdge) []int {
	n := len(edges)
	index := make([]int, n)
	low := make([]int, n)
	comp := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	type frame struct{ v, next int }
	var frames []frame
	counter, ncomp := 0, 0
	for s := range n {
		if index[s] >= 0 {
			continue
		}
		frames = append(frames, frame{s, 0})
		index[s], low[s] = counter, counter
		counter++
		stack = append(stack, s)
		onStack[s] = true
		for len(frames) > 0 {
			f := &frames[len(frames)-1]
			v := f.v
			if f.next < len(edges[v]) {
				w := edges[v][f.next].to
				f.next++
				if index[w] < 0 {
					index[w], low[w] = counter, counter
					counter++
					stack = append(stack, w)
					onStack[w] = true
					frames = append(frames, frame{w, 0})
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			frames = frames[:len(frames)-1]
			if len(frames) > 0 {
				u := frames[len(frames)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = ncomp
					if w == v {
						break
					}
				}
				ncomp++
			}
		}
	}
	return comp
}

// path returns the rules on a shortest left-edge path from -> ... -> to inside
// one component, both ends included.
func path(edges [][]leftEdge, comp []int, from, to int) []int {
	prev := map[int]int{from: -1}
	queue := []int{from}
	for len(queue) > 0 && func() bool { _, ok := prev[to]; return !ok }() {
		v := queue[0]
		queue = queue[1:]
		for _, e := range edges[v] {
			if _, seen := prev[e.to]; !seen && comp[e.to] == comp[from] {
				prev[e.to] = v
				queue = append(queue, e.to)
			}
		}
	}
	var out []int
	for v := to; v >= 0; v = prev[v] {
		out = append(out, v)
		if v == from {
			break
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// cycleNames writes a cycle of rules with the names the grammar's author
// wrote: a generated helper rule stands for the rule it was generated for.
func cycleNames(c *compiler, cycle []int) string {
	var names []string
	for _, r := range cycle {
		name := c.g.Rules[c.owner[r]].Name
		if len(names) == 0 || names[len(names)-1] != name {
			names = append(names, name)
		}
	}
	if len(names) == 1 {
		names = append(names, names[0])
	}
	return strings.Join(names, " -> ")
}
