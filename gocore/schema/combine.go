package schema

import (
	"math/big"
	"strconv"
)

// maxCombinations bounds the branches that anyOf/oneOf groups multiply into.
const maxCombinations = 256

// visitGroups converts base AND (one branch of each group). A branch that
// cannot match together with base is dropped; oneOf branches must be provably
// exclusive.
func (c *conv) visitGroups(base *object, groups []altGroup, ptr, hint string) (string, error) {
	trivial := true
	for _, k := range base.keys {
		if isConstraining(k) {
			trivial = false
			break
		}
	}
	// flattened branches, each merged with base (for the exclusivity check and
	// for the combinations)
	merged := make([][]*object, len(groups))
	retyped := false // dropSharedTypes changed a branch: write the merged branches
	total := 1
	for gi, g := range groups {
		for bi, br := range g.branches {
			bptr := g.ptr + "/" + strconv.Itoa(bi)
			var fb *object
			switch br := br.(type) {
			case bool:
				if !br {
					merged[gi] = append(merged[gi], nil)
					continue
				}
				fb = newObject()
			case *object:
				f, err := c.flatten(br, bptr, 0)
				if err != nil {
					if isUnsat(err) {
						merged[gi] = append(merged[gi], nil) // matches nothing
						continue
					}
					return "", err
				}
				fb = f
			default:
				return "", c.errorf("", bptr, "a schema must be an object or a boolean")
			}
			m, err := c.merge(base, fb, bptr)
			if err != nil {
				return "", err
			}
			merged[gi] = append(merged[gi], m)
		}
		if g.one {
			// a type that two or more branches accept whole (no keyword of theirs
			// applies to it) is never matched by exactly one: no branch keeps it
			if m, changed := c.dropSharedTypes(merged[gi]); changed {
				merged[gi], retyped = m, true
			}
		pairs:
			for i := 0; i < len(merged[gi]); i++ {
				for j := i + 1; j < len(merged[gi]); j++ {
					if merged[gi][i] == nil || merged[gi][j] == nil {
						continue
					}
					if !c.disjoint(merged[gi][i], merged[gi][j], 0) {
						// exactly one: branch i and the negation of every other
						if branches, ok := c.exclusiveBranches(g.branches); ok {
							groups[gi] = altGroup{branches: branches, ptr: g.ptr}
							g = groups[gi]
							merged[gi] = nil
							for bi, br := range branches {
								f, err := c.flatten(br.(*object), g.ptr+"/"+strconv.Itoa(bi), 0)
								if err != nil {
									if isUnsat(err) {
										merged[gi] = append(merged[gi], nil)
										continue
									}
									return "", err
								}
								m, err := c.merge(base, f, g.ptr+"/"+strconv.Itoa(bi))
								if err != nil {
									return "", err
								}
								merged[gi] = append(merged[gi], m)
							}
							break pairs
						}
						if err := c.unsupported("oneOf", g.ptr, "branches "+strconv.Itoa(i)+" and "+strconv.Itoa(j)+
							" may both match (no differing type, const/enum or required-property discriminator), so exactly-one cannot be enforced"); err != nil {
							return "", err
						}
					}
				}
			}
		}
		total *= len(g.branches)
		if total > maxCombinations {
			return "", c.errorf(g.ptr[len(ptr)+1:], ptr, "anyOf/oneOf combine into more than %d alternatives", maxCombinations)
		}
	}
	var alts []string
	seen := map[string]bool{}
	var firstErr error
	add := func(x string, err error) error {
		if err != nil {
			if isUnsat(err) {
				if firstErr == nil {
					firstErr = err
				}
				return nil
			}
			return err
		}
		if !seen[x] {
			seen[x] = true
			alts = append(alts, x)
		}
		return nil
	}
	if trivial && len(groups) == 1 && !retyped {
		// keep each branch as written, so that a $ref stays a rule reference
		g := groups[0]
		for bi, br := range g.branches {
			if merged[0][bi] == nil {
				continue
			}
			x, err := c.visit(br, g.ptr+"/"+strconv.Itoa(bi), hint+"-"+strconv.Itoa(bi))
			if err := add(x, err); err != nil {
				return "", err
			}
		}
	} else {
		// Every combination (one branch per group, the last group varying
		// fastest) is base merged with its branches from the first group on;
		// a combination shares its merged prefix with its neighbours, so each
		// prefix is merged once (merge leaves its inputs alone).
		var walk func(gi int, m *object) error
		walk = func(gi int, m *object) error {
			if gi == len(groups) {
				x, err := c.visitFlat(m, ptr, hint+"-"+strconv.Itoa(len(alts)))
				return add(x, err)
			}
			for _, b := range merged[gi] {
				if b == nil {
					continue // an unsatisfiable branch
				}
				next, err := c.merge(m, b, groups[gi].ptr)
				if err != nil {
					return err
				}
				if why := c.prefixUnsat(next, ptr, 0); why != nil {
					// every combination that starts so is unsatisfiable
					if firstErr == nil {
						firstErr = why
					}
					continue
				}
				if err := walk(gi+1, next); err != nil {
					return err
				}
			}
			return nil
		}
		c.combos++
		err := walk(0, base)
		c.combos--
		if err != nil {
			return "", err
		}
	}
	if len(alts) == 0 {
		if firstErr != nil {
			return "", firstErr
		}
		return "", c.unsatf("anyOf", ptr, "no branch can match")
	}
	return c.named(hint, alt(alts)), nil
}

// dropSharedTypes removes from oneOf's (merged) branches every JSON type that
// two or more of them accept whole, where every branch accepting it does: an
// instance of that type matches all of those branches, so never exactly one
// ({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]} accepts no string).
// Types are judged as JSON Schema reads the branches (possibleTypes). A branch
// left with no type matches nothing (nil).
func (c *conv) dropSharedTypes(branches []*object) ([]*object, bool) {
	kinds := []string{"object", "array", "string", "number", "boolean", "null"}
	whole := func(o *object, kind string) bool {
		for _, k := range o.keys {
			switch {
			case k == "type" || k == "nullable":
			case familyOf(k) != "":
				if familyOf(k) == kind {
					return false
				}
			case k == "format":
				if kind == "string" {
					return false
				}
			case isConstraining(k):
				return false // enum, const, not, $ref, groups, ...: not judged here
			}
		}
		return true
	}
	pts := make([]map[string]bool, len(branches))
	for i, b := range branches {
		if b != nil {
			pts[i] = c.possibleTypes(b)
		}
	}
	drop := map[string]bool{}
	for _, kind := range kinds {
		n, all := 0, true
		for i, b := range branches {
			if b == nil {
				continue
			}
			pt := pts[i]
			has := pt[kind] || kind == "number" && (pt["integer"] || pt["fraction"])
			if !has {
				continue
			}
			if kind == "number" && !(pt["integer"] && pt["fraction"]) {
				all = false // integers only: not the whole of number
			}
			n++
			all = all && whole(b, kind)
		}
		if n >= 2 && all {
			drop[kind] = true
		}
	}
	if len(drop) == 0 {
		return branches, false
	}
	out := make([]*object, len(branches))
	for i, b := range branches {
		if b == nil {
			continue
		}
		pt := pts[i]
		var keep []any
		for _, kind := range kinds {
			switch {
			case drop[kind]:
			case kind == "number" && pt["fraction"]:
				keep = append(keep, "number")
			case kind == "number" && pt["integer"]:
				keep = append(keep, "integer")
			case pt[kind]:
				keep = append(keep, kind)
			}
		}
		if len(keep) == 0 {
			continue // matches nothing
		}
		nb := b.clone()
		nb.del("nullable")
		nb.set("type", keep)
		out[i] = nb
	}
	return out, true
}

// prefixUnsat returns why the merged schema o is certainly unsatisfiable, or nil: it
// allows no type, or a property it requires and lists in properties has the schema
// false or (checked the same way, a few levels down) is certainly unsatisfiable.
// Constraints merged into o later can only keep it so, so visitGroups skips every
// combination that starts with such a prefix (in a oneOf made exclusive, most of
// them: each branch is merged with the negation of every other). It has no effect
// on the conversion: anything it records (ignored keywords) is dropped, and any
// error other than unsatisfiability counts as "not certain".
func (c *conv) prefixUnsat(o *object, ptr string, depth int) error {
	n := len(c.ignored)
	defer func() { c.ignored = c.ignored[:n] }()
	if _, err := c.types(o, ptr); err != nil {
		if isUnsat(err) {
			return err
		}
		return nil
	}
	if depth >= 3 {
		return nil
	}
	pv, _ := o.get("properties")
	props, _ := pv.(*object)
	rv, _ := o.get("required")
	req, _ := rv.([]any)
	if props == nil || len(req) == 0 {
		return nil
	}
	for _, r := range req {
		name, ok := r.(string)
		if !ok {
			continue
		}
		s, ok := props.get(name)
		if !ok {
			continue
		}
		pptr := ptr + "/properties/" + escPtr(name)
		switch s := s.(type) {
		case bool:
			if !s {
				return c.unsatf("required", ptr, "the required property %q is not allowed", name)
			}
		case *object:
			fl, err := c.flatten(s, pptr, 0)
			if err != nil {
				if isUnsat(err) {
					return err
				}
				continue
			}
			if err := c.prefixUnsat(fl, pptr, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// possibleTypes is the set of kinds an instance of the flattened schema o may
// have, with "integer" and "fraction" (a non-integer number) for numbers.
func (c *conv) possibleTypes(o *object) map[string]bool {
	out := map[string]bool{}
	if vals, ok := c.constValues(o); ok {
		for _, v := range vals {
			k := jsonKind(v)
			if k == "number" {
				k = "fraction"
			}
			out[k] = true
		}
		return out
	}
	// JSON Schema's types, not the narrowed ones visitFlat writes: whether two
	// oneOf branches can both match is a question about the schema (a string
	// satisfies {"minimum": 5}), whatever each branch's grammar then keeps.
	ts := allTypes
	if tv, ok := o.get("type"); ok {
		ts = typeList(tv)
		if ts == nil {
			return map[string]bool{"object": true, "array": true, "string": true, "integer": true, "fraction": true, "boolean": true, "null": true}
		}
		if o.val("nullable") == true {
			ts = append(append([]string(nil), ts...), "null")
		}
	}
	for _, t := range ts {
		if t == "number" {
			out["integer"], out["fraction"] = true, true
		} else {
			out[t] = true
		}
	}
	return out
}

// constValues are the values allowed by enum and const, if either is present.
func (c *conv) constValues(o *object) ([]any, bool) {
	var vals []any
	has := false
	if ev, ok := o.get("enum"); ok {
		arr, _ := ev.([]any)
		vals, has = arr, true
	}
	if cv, ok := o.get("const"); ok {
		if has {
			vals = keepEqual(vals, cv)
		} else {
			vals = []any{cv}
		}
		has = true
	}
	return vals, has
}

// disjoint reports whether no instance can match both flattened schemas: their
// types differ, their constants differ, or a property required by both has
// disjoint schemas, or one requires a property the other forbids.
func (c *conv) disjoint(x, y *object, depth int) bool {
	if depth > 8 {
		return false
	}
	if _, ok := x.get(groupsKey); ok {
		return false
	}
	if _, ok := y.get(groupsKey); ok {
		return false
	}
	tx, ty := c.possibleTypes(x), c.possibleTypes(y)
	overlap := false
	for t := range tx {
		if ty[t] {
			overlap = true
		}
	}
	if !overlap {
		return true
	}
	vx, okx := c.constValues(x)
	vy, oky := c.constValues(y)
	if okx && oky {
		keys := map[string]bool{}
		for _, v := range vx {
			keys[valueKey(v)] = true
		}
		common := false
		for _, v := range vy {
			if keys[valueKey(v)] {
				common = true
			}
		}
		if !common {
			return true
		}
	}
	// every type both allow must be told apart by its own keywords
	for t := range tx {
		if !ty[t] && !(t == "integer" && ty["number"]) && !(t == "number" && ty["integer"]) {
			continue
		}
		switch t {
		case "string":
			if !countsDisjoint(x, y, "minLength", "maxLength") {
				return false
			}
		case "array":
			if !countsDisjoint(x, y, "minItems", "maxItems") {
				return false
			}
		case "number", "integer":
			if !rangesDisjoint(x, y) {
				return false
			}
		case "object":
			if !countsDisjoint(x, y, "minProperties", "maxProperties") && !c.objectsDisjoint(x, y, depth) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// countsDisjoint: the [min, max] counts of x and y (length, items,
// properties) do not meet.
func countsDisjoint(x, y *object, minK, maxK string) bool {
	lo := func(o *object) int { n, _ := intKeyword(o, minK); return n }
	hi := func(o *object) int {
		if n, ok := intKeyword(o, maxK); ok {
			return n
		}
		return -1
	}
	return hi(x) >= 0 && hi(x) < lo(y) || hi(y) >= 0 && hi(y) < lo(x)
}

// rangesDisjoint: the numeric bounds of x and y leave no number to both.
func rangesDisjoint(x, y *object) bool {
	rx, okx := rawBounds(x)
	ry, oky := rawBounds(y)
	if !okx || !oky {
		return false
	}
	xlo, xloExcl, _, xhi, xhiExcl, _ := tighterBounds(rx)
	ylo, yloExcl, _, yhi, yhiExcl, _ := tighterBounds(ry)
	// below: every number up to hi is below every number from lo
	below := func(hi *big.Rat, hiExcl bool, lo *big.Rat, loExcl bool) bool {
		if hi == nil || lo == nil {
			return false
		}
		c := hi.Cmp(lo)
		return c < 0 || c == 0 && (hiExcl || loExcl)
	}
	return below(xhi, xhiExcl, ylo, yloExcl) || below(yhi, yhiExcl, xlo, xloExcl)
}

// objectsDisjoint looks for a discriminating property: one that one object
// requires and the other forbids, or that both require with disjoint schemas.
func (c *conv) objectsDisjoint(x, y *object, depth int) bool {
	reqs := func(o *object) map[string]bool {
		m := map[string]bool{}
		r, _ := o.get("required")
		arr, _ := r.([]any)
		for _, v := range arr {
			if s, ok := v.(string); ok {
				m[s] = true
			}
		}
		return m
	}
	rx, ry := reqs(x), reqs(y)
	forbids := func(o *object, p string) bool {
		props, _ := o.get("properties")
		po, _ := props.(*object)
		if s, ok := po.get(p); ok {
			return s == false
		}
		if o.has("patternProperties") {
			return false
		}
		ad, ok := o.get("additionalProperties")
		return ok && ad == false
	}
	for p := range rx {
		if forbids(y, p) {
			return true
		}
	}
	for p := range ry {
		if forbids(x, p) {
			return true
		}
	}
	for p := range rx {
		if !ry[p] {
			continue
		}
		px, py := c.propSchema(x, p), c.propSchema(y, p)
		if px != nil && py != nil && c.disjoint(px, py, depth+1) {
			return true
		}
	}
	return false
}

// propSchema is the flattened schema of property p of o (nil if none or unusable).
func (c *conv) propSchema(o *object, p string) *object {
	props, _ := o.get("properties")
	po, _ := props.(*object)
	s, ok := po.get(p)
	if !ok {
		return nil
	}
	so, ok := s.(*object)
	if !ok {
		return nil
	}
	f, err := c.flatten(so, "", 0)
	if err != nil {
		return nil
	}
	return f
}

// exclusiveBranches rewrites oneOf [B1..Bn] as the anyOf branches
// Bi AND NOT Bj (j != i), where every branch has an exact negation (see
// rewriteNot): an instance then matches exactly one of the original branches.
func (c *conv) exclusiveBranches(branches []any) ([]any, bool) {
	negs := make([]any, len(branches))
	for i, b := range branches {
		if b == false {
			negs[i] = true
			continue
		}
		neg, ok := c.rewriteNot(b, 1)
		if !ok {
			return nil, false
		}
		negs[i] = neg
	}
	out := make([]any, len(branches))
	for i, b := range branches {
		all := []any{b}
		for j := range branches {
			if j != i {
				all = append(all, negs[j])
			}
		}
		o := newObject()
		o.set("allOf", all)
		out[i] = o
	}
	return out, true
}
