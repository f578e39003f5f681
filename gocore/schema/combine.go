package schema

import (
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
	if trivial && len(groups) == 1 {
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
	ts, err := c.types(o, "")
	if err != nil {
		return out
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
	if !(tx["object"] && ty["object"]) {
		return false
	}
	// only objects can still overlap: look for a discriminating property
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
