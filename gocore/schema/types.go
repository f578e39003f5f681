package schema

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tetherlm/tether/gocore/gbnf"
)

func (c *conv) unsatf(keyword, ptr, format string, args ...any) error {
	e := c.errorf(keyword, ptr, format, args...).(*SchemaError)
	e.unsat = true
	return e
}

func isUnsat(err error) bool {
	e, ok := err.(*SchemaError)
	return ok && e.unsat
}

// named makes expr a rule of its own (named after hint) unless it is atomic.
func (c *conv) named(hint, expr string) string {
	if isAtom(expr) {
		return expr
	}
	return c.b.rule(hint, expr)
}

// visitFlat converts a flattened schema (no $ref beside other keywords, no allOf).
func (c *conv) visitFlat(o *object, ptr, hint string) (string, error) {
	if c.combos == 0 {
		return c.visitFlatOnce(o, ptr, hint)
	}
	key, ok := c.flatKey(o, ptr)
	if !ok {
		return c.visitFlatOnce(o, ptr, hint)
	}
	if x, ok := c.flatMemo[key]; ok {
		return x, nil
	}
	x, err := c.visitFlatOnce(o, ptr, hint)
	if err == nil {
		if c.flatMemo == nil {
			c.flatMemo = map[string]string{}
		}
		c.flatMemo[key] = x
	}
	return x, err
}

// flatKey is what visitFlat's result depends on: the schema (its keywords in
// order, and its private ones: groups with their pointers, conflicts), the
// pointer it is at, and the references at whose left edge it is (a
// reference reached there again is left recursion). The rules a first
// conversion wrote stay, and a repeat of it would write nothing new: its
// $refs are converted once, and the keywords it ignores are listed once per
// pointer. ok is false for a value the key cannot spell. (canonical is not
// this key: it writes nothing for groups and folds invalid UTF-8 into U+FFFD,
// so different schemas could share its spelling.)
func (c *conv) flatKey(o *object, ptr string) (string, bool) {
	b := append(c.keyBuf[:0], ptr...)
	b = append(b, 0)
	if len(c.leftEdge) > 0 {
		refs := make([]string, 0, len(c.leftEdge))
		for r := range c.leftEdge {
			refs = append(refs, r)
		}
		slices.Sort(refs)
		for _, r := range refs {
			b = appendKeyString(b, 'L', r)
		}
	}
	b, ok := appendKeyValue(b, o)
	c.keyBuf = b
	return string(b), ok
}

func appendKeyString(b []byte, tag byte, s string) []byte {
	b = append(b, tag)
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendKeyValue(b []byte, v any) ([]byte, bool) {
	ok := true
	switch v := v.(type) {
	case nil:
		b = append(b, 'n')
	case bool:
		b = append(b, 'f')
		if v {
			b[len(b)-1] = 't'
		}
	case string:
		b = appendKeyString(b, 's', v)
	case json.Number:
		b = appendKeyString(b, '#', string(v))
	case *object:
		b = append(b, '{')
		b = binary.AppendUvarint(b, uint64(len(v.keys)))
		for _, k := range v.keys {
			b = appendKeyString(b, 'k', k)
			if b, ok = appendKeyValue(b, v.val(k)); !ok {
				return b, false
			}
		}
	case []any:
		b = append(b, '[')
		b = binary.AppendUvarint(b, uint64(len(v)))
		for _, x := range v {
			if b, ok = appendKeyValue(b, x); !ok {
				return b, false
			}
		}
	case []altGroup:
		b = append(b, 'G')
		b = binary.AppendUvarint(b, uint64(len(v)))
		for _, g := range v {
			b = appendKeyString(b, 'g', g.ptr)
			if g.one {
				b = append(b, '1')
			}
			if b, ok = appendKeyValue(b, g.branches); !ok {
				return b, false
			}
		}
	default:
		return b, false
	}
	return b, true
}

func (c *conv) visitFlatOnce(o *object, ptr, hint string) (string, error) {
	if cv, ok := o.get(conflictKey); ok {
		parts := strings.SplitN(cv.(string), "\x00", 2)
		if err := c.unsupported(parts[0], parts[1], "allOf (or $ref with siblings) combines values of this keyword that cannot be enforced together"); err != nil {
			return "", err
		}
		o = o.clone()
		o.del(conflictKey)
	}
	if vals, has := c.constValues(o); has && needsDecidedConstants(o) {
		// the values decide every keyword, combinations included
		if x, ok, err := c.decidedConstants(o, vals, ptr, hint); ok || err != nil {
			return x, err
		}
	}
	var groups []altGroup
	for _, k := range []string{"anyOf", "oneOf"} {
		if v, ok := o.get(k); ok {
			arr, ok := v.([]any)
			if !ok || len(arr) == 0 {
				return "", c.errorf(k, ptr, "must be a non-empty array of schemas")
			}
			groups = append(groups, altGroup{one: k == "oneOf", branches: arr, ptr: ptr + "/" + k})
		}
	}
	if gv, ok := o.get(groupsKey); ok {
		groups = append(groups, gv.([]altGroup)...)
	}
	if len(groups) > 0 {
		base := o.clone()
		base.del("anyOf")
		base.del("oneOf")
		base.del(groupsKey)
		return c.visitGroups(base, groups, ptr, hint)
	}

	if c.cfg.llamaCompat && len(o.keys) == 0 {
		return primRef(c.b, "object"), nil // llama.cpp reads {} as any object
	}
	types, err := c.types(o, ptr)
	if err != nil {
		return "", err
	}
	if nv, ok := o.get("not"); ok {
		if excluded, all, ok := notTypes(nv); ok {
			if all {
				return "", c.unsatf("not", ptr, "not {} accepts nothing")
			}
			if types, ok = removeTypes(types, excluded); ok {
				if len(types) == 0 {
					return "", c.unsatf("not", ptr, "not excludes every allowed type")
				}
				o = o.clone()
				o.del("not")
			}
		}
	}
	if o.has("enum") || o.has("const") {
		if !o.has("type") {
			// the values say which types: keywords of other types do not
			// narrow them (an empty array satisfies "properties")
			types = allTypes
		}
		return c.enumExpr(o, types, ptr, hint)
	}
	if err := c.checkUnsupported(o, types, ptr); err != nil {
		return "", err
	}
	var alts []string
	var firstErr error
	for _, t := range types {
		x, err := c.typeExpr(t, o, ptr, hint)
		if err != nil {
			if isUnsat(err) {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			return "", err
		}
		alts = append(alts, x)
	}
	if len(alts) == 0 {
		if firstErr != nil {
			return "", firstErr
		}
		return "", c.unsatf("type", ptr, "no type is allowed")
	}
	return c.named(hint, alt(alts)), nil
}

// decidedConstants writes the enum/const values of o that satisfy all of o,
// when checkConst decides that for each value (ok false: it does not, and
// visitFlatOnce goes on as without them).
func (c *conv) decidedConstants(o *object, vals []any, ptr, hint string) (string, bool, error) {
	var keep []any
	rest := o.clone() // every value is one of vals: the check is the rest of o
	rest.del("enum")
	rest.del("const")
	for _, v := range vals {
		if loneSurrogate(v) {
			return "", false, nil // enumExpr says why
		}
		ok, decided := c.checkConst(v, rest, 0)
		if !decided {
			return "", false, nil
		}
		if ok {
			keep = append(keep, v)
		}
	}
	if len(keep) == 0 {
		return "", true, c.unsatf("enum", ptr, "no value of the enum/const satisfies the schema")
	}
	only := newObject()
	only.set("enum", keep)
	x, err := c.enumExpr(only, allTypes, ptr, hint)
	return x, true, err
}

// needsDecidedConstants: o has a keyword enumExpr cannot check on the values
// (an applicator, or one checkUnsupported would refuse); only then are the
// values checked against all of o by decidedConstants.
func needsDecidedConstants(o *object) bool {
	for _, k := range o.keys {
		switch k {
		case "not", "if", "anyOf", "oneOf", "allOf", groupsKey, "$ref", "$dynamicRef", "$recursiveRef",
			"dependentRequired", "dependentSchemas", "dependencies", "contains", "uniqueItems", "propertyNames":
			return true
		}
	}
	return false
}

// types lists the types an instance may have: "type" (plus null with nullable),
// else the types the schema's keywords are about, else all. integer is dropped
// when number is present.
func (c *conv) types(o *object, ptr string) ([]string, error) {
	var list []string
	if tv, ok := o.get("type"); ok {
		list = typeList(tv)
		if list == nil {
			return nil, c.errorf("type", ptr, "must be a type name or an array of type names")
		}
		for _, t := range list {
			if !validType(t) {
				return nil, c.errorf("type", ptr, "unknown type %q (expected one of %s)", t, strings.Join(allTypes, ", "))
			}
		}
		if o.val("nullable") == true {
			list = append(list, "null")
		}
	} else if c.cfg.llamaCompat && len(o.keys) == 0 {
		list = []string{"object"}
	} else if c.cfg.exactTypes {
		list = allTypes // keywords of other types do not apply to a type (ExactTypes)
	} else {
		fams := map[string]bool{}
		for _, k := range o.keys {
			if f := familyOf(k); f != "" && !vacuous(o.val(k)) {
				fams[f] = true
			}
		}
		if f, ok := o.val("format").(string); ok && isStringFormat(f) {
			fams["string"] = true
		}
		for _, t := range allTypes {
			if fams[t] {
				list = append(list, t)
			}
		}
		if len(list) == 0 {
			list = allTypes
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, t := range list {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	if seen["number"] && seen["integer"] {
		var x []string
		for _, t := range out {
			if t != "integer" {
				x = append(x, t)
			}
		}
		out = x
	}
	if len(out) == 0 {
		return nil, c.unsatf("type", ptr, "no type is allowed (the types of allOf branches do not intersect)")
	}
	return out, nil
}

func hasType(types []string, t string) bool {
	for _, x := range types {
		if x == t || t == "number" && x == "integer" {
			return true
		}
	}
	return false
}

// checkUnsupported fails (or, leniently, records) keywords that constrain the
// allowed types and that a grammar cannot enforce.
func (c *conv) checkUnsupported(o *object, types []string, ptr string) error {
	for _, k := range o.keys {
		v := o.val(k)
		var reason string
		switch k {
		case "not":
			reason = "negation (not) cannot be expressed in a grammar"
		case "if":
			if o.has("then") || o.has("else") {
				reason = "conditional schemas (if/then/else) cannot be enforced by a grammar"
			}
		case "$dynamicRef", "$recursiveRef":
			reason = "dynamic references are not supported"
		case "dependentRequired", "dependentSchemas", "dependencies":
			if vo, ok := v.(*object); hasType(types, "object") && (!ok || len(vo.keys) > 0) {
				reason = "dependencies between properties are not supported"
			}
		}
		if reason != "" {
			if err := c.unsupported(k, ptr, reason); err != nil {
				return err
			}
		}
	}
	return nil
}

// intKeyword reads a non-negative integer keyword.
func intKeyword(o *object, k string) (int, bool) {
	v, ok := o.get(k)
	if !ok {
		return 0, false
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	r, ok := ratOf(n)
	if !ok || !r.IsInt() || r.Sign() < 0 {
		return 0, false
	}
	if !r.Num().IsInt64() || r.Num().Int64() > 1<<30 {
		return 1 << 30, true
	}
	return int(r.Num().Int64()), true
}

// countKeyword reads a count keyword such as minLength, checking its type.
func (c *conv) countKeyword(o *object, k, ptr string, def int) (int, error) {
	if !o.has(k) {
		return def, nil
	}
	n, ok := intKeyword(o, k)
	if !ok {
		return 0, c.errorf(k, ptr, "must be a non-negative integer")
	}
	return n, nil
}

func (c *conv) typeExpr(t string, o *object, ptr, hint string) (string, error) {
	switch t {
	case "null":
		return primRef(c.b, "null"), nil
	case "boolean":
		return primRef(c.b, "boolean"), nil
	case "integer":
		return c.numberExpr(o, ptr, true)
	case "number":
		return c.numberExpr(o, ptr, false)
	case "string":
		return c.stringExpr(o, ptr)
	case "array", "object":
		var x string
		err := c.inside(func() (err error) {
			if t == "array" {
				x, err = c.arrayExpr(o, ptr, hint)
			} else {
				x, err = c.objectExpr(o, ptr, hint)
			}
			return err
		})
		return x, err
	}
	return "", c.errorf("type", ptr, "unknown type %q", t)
}

// ---- enum and const ----

func (c *conv) enumExpr(o *object, types []string, ptr, hint string) (string, error) {
	var vals []any
	kw := "enum"
	if ev, ok := o.get("enum"); ok {
		arr, ok := ev.([]any)
		if !ok {
			return "", c.errorf("enum", ptr, "must be an array")
		}
		vals = arr
	}
	if cv, ok := o.get("const"); ok {
		kw = "const"
		if o.has("enum") {
			vals = keepEqual(vals, cv)
		} else {
			vals = []any{cv}
		}
	}
	var kinds []string
	for _, v := range vals {
		if loneSurrogate(v) {
			return "", c.errorf(kw, ptr, "the value %s holds a lone UTF-16 surrogate (a \\uD800-\\uDFFF escape without its pair): no valid JSON text contains it", canonical(v))
		}
		kinds = append(kinds, jsonKind(v))
	}
	if err := c.checkUnsupported(o, kinds, ptr); err != nil {
		return "", err
	}
	seen := map[string]bool{}
	var alts, scalars []string
	for _, v := range vals {
		k := jsonKind(v)
		if !hasType(types, k) && !(k == "integer" && hasType(types, "number")) {
			continue
		}
		ok, decided := c.checkValue(v, o)
		if !decided {
			if err := c.unsupported(kw, ptr, "the enum/const values cannot be checked against the other keywords of this schema"); err != nil {
				return "", err
			}
			ok = true
		}
		if !ok {
			continue
		}
		switch v.(type) {
		case []any, *object:
			x := c.literal(v)
			if !seen[x] {
				seen[x] = true
				alts = append(alts, x)
			}
		case json.Number:
			if t := canonical(v); c.cfg.exactTypes && !strings.ContainsAny(t, "eE") {
				// ExactTypes: the same value with trailing zeros (1, 1.0, 1.00)
				x := gbnf.QuoteLiteral(t) + " " + group(`"." "0"+`) + "?"
				if strings.Contains(t, ".") {
					x = gbnf.QuoteLiteral(t) + ` "0"*`
				}
				if !seen[x] {
					seen[x] = true
					alts = append(alts, x)
				}
				continue
			}
			scalars = append(scalars, canonical(v))
		default:
			scalars = append(scalars, canonical(v))
		}
	}
	if len(scalars) > 0 {
		alts = append(alts, c.literalTrie(scalars, hint))
	}
	if len(alts) == 0 {
		return "", c.unsatf(kw, ptr, "no value of the enum/const satisfies the schema")
	}
	return c.named(hint, alt(alts)), nil
}

// literalTrie is the grammar of a set of texts written as a prefix-factored
// alternation: at every point the next character decides the branch, so the
// engine follows one stack whatever the number of texts, and the grammar's
// size is linear in theirs (100,000 enum strings compile in one pass, where a
// flat alternation of as many literals would be as many stacks at the first
// character). Branching points become rules (identical suffixes share one).
func (c *conv) literalTrie(texts []string, hint string) string {
	return c.trie(texts, nil, hint)
}

// trie writes texts as a prefix-factored alternation (see literalTrie); with
// conts, text i is followed by the expression conts[i] (texts must then be
// distinct).
func (c *conv) trie(texts, conts []string, hint string) string {
	type item struct{ text, cont string }
	items := make([]item, len(texts))
	for i, t := range texts {
		items[i].text = t
		if conts != nil {
			items[i].cont = conts[i]
		}
	}
	slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.text, b.text) })
	items = slices.CompactFunc(items, func(a, b item) bool { return a.text == b.text })
	var build func(ts []item, depth int) string
	build = func(ts []item, depth int) string {
		var alts []string
		end := len(ts[0].text) == depth
		if end {
			if ts[0].cont != "" {
				alts = append(alts, ts[0].cont)
				end = false
			}
			ts = ts[1:]
		}
		for len(ts) > 0 {
			r, _ := utf8.DecodeRuneInString(ts[0].text[depth:])
			n := 1
			for n < len(ts) {
				r2, _ := utf8.DecodeRuneInString(ts[n].text[depth:])
				if r2 != r {
					break
				}
				n++
			}
			grp := ts[:n]
			ts = ts[n:]
			first, last := grp[0].text[depth:], grp[len(grp)-1].text[depth:]
			l := 0
			for l < len(first) && l < len(last) && first[l] == last[l] {
				l++
			}
			for l < len(first) && !utf8.RuneStart(first[l]) {
				l--
			}
			if len(grp) == 1 {
				l = len(first)
			}
			alts = append(alts, seq(gbnf.QuoteLiteral(first[:l]), build(grp, depth+l)))
		}
		switch {
		case len(alts) == 0:
			return ""
		case end && len(alts) == 1:
			return opt(alts[0])
		case end:
			return c.b.rule(hint+"-t", alt(alts)) + "?"
		case len(alts) == 1:
			return alts[0]
		}
		return c.b.rule(hint+"-t", alt(alts))
	}
	if len(items) == 0 {
		return noMatch
	}
	x := build(items, 0)
	if x == "" {
		return `""`
	}
	return x
}

// checkValue reports whether the constant v satisfies o's type-specific
// keywords; decided is false when it cannot tell.
func (c *conv) checkValue(v any, o *object) (ok, decided bool) {
	switch v := v.(type) {
	case string:
		n := utf8.RuneCountInString(v)
		if m, has := intKeyword(o, "minLength"); has && n < m {
			return false, true
		}
		if m, has := intKeyword(o, "maxLength"); has && n > m {
			return false, true
		}
		if p, has := o.get("pattern"); has {
			ps, _ := p.(string)
			re, err := c.ecmaRegexp(ps)
			if err != nil {
				return false, false
			}
			if !re.MatchString(v) {
				return false, true
			}
		}
		if fv, has := o.get("format"); has {
			if fs, _ := fv.(string); assertedFormat(fs) || isStringFormat(fs) {
				return false, false
			}
		}
		more, _ := o.val(morePatternsKey).([]any)
		for _, p := range more {
			ps, _ := p.(string)
			re, err := c.ecmaRegexp(ps)
			if err != nil {
				return false, false
			}
			if !re.MatchString(v) {
				return false, true
			}
		}
		nots, _ := o.val(notStringsKey).([]any)
		for _, n := range nots {
			switch n := n.(type) {
			case string:
				re, err := c.ecmaRegexp(n)
				if err != nil {
					return false, false
				}
				if re.MatchString(v) {
					return false, true
				}
			case []any:
				for _, x := range n {
					if x == v {
						return false, true
					}
				}
			}
		}
		return true, true
	case json.Number:
		r, good := ratOf(v)
		if !good {
			return false, false
		}
		for _, b := range []struct {
			k    string
			pass func(int) bool
		}{
			{"minimum", func(c int) bool { return c >= 0 }},
			{"exclusiveMinimum", func(c int) bool { return c > 0 }},
			{"maximum", func(c int) bool { return c <= 0 }},
			{"exclusiveMaximum", func(c int) bool { return c < 0 }},
		} {
			if bv, has := o.get(b.k); has {
				bn, isNum := bv.(json.Number)
				br, good := ratOf(bn)
				if !isNum || !good {
					return false, false
				}
				if !b.pass(r.Cmp(br)) {
					return false, true
				}
			}
		}
		if mv, has := o.get("multipleOf"); has {
			mn, _ := mv.(json.Number)
			mr, good := ratOf(mn)
			if !good || mr.Sign() <= 0 {
				return false, false
			}
			if !new(big.Rat).Quo(r, mr).IsInt() {
				return false, true
			}
		}
		return true, true
	case *object:
		return c.checkObjectConst(v, o)
	case []any:
		return c.checkArrayConst(v, o)
	}
	return true, true
}

// literal is the grammar of one constant value: canonical spelling, with
// whitespace allowed between the tokens of arrays and objects.
func (c *conv) literal(v any) string {
	switch v := v.(type) {
	case []any:
		if len(v) == 0 {
			return seq(gbnf.QuoteLiteral("["), c.ws(), gbnf.QuoteLiteral("]"))
		}
		parts := []string{gbnf.QuoteLiteral("["), c.ws()}
		for i, x := range v {
			if i > 0 {
				parts = append(parts, litComma, c.ws())
			}
			parts = append(parts, c.literal(x), c.ws())
		}
		parts = append(parts, gbnf.QuoteLiteral("]"))
		return "(" + seq(parts...) + ")"
	case *object:
		if len(v.keys) == 0 {
			return seq(gbnf.QuoteLiteral("{"), c.ws(), gbnf.QuoteLiteral("}"))
		}
		parts := []string{gbnf.QuoteLiteral("{"), c.ws()}
		for i, k := range v.keys {
			if i > 0 {
				parts = append(parts, litComma, c.ws())
			}
			parts = append(parts, gbnf.QuoteLiteral(jsonQuote(k)), c.ws(), litColon, c.ws(), c.literal(v.val(k)), c.ws())
		}
		parts = append(parts, gbnf.QuoteLiteral("}"))
		return "(" + seq(parts...) + ")"
	}
	return gbnf.QuoteLiteral(canonical(v))
}

// ---- numbers ----

// bound reads a numeric keyword.
func (c *conv) bound(o *object, k, ptr string) (*big.Rat, error) {
	v, ok := o.get(k)
	if !ok {
		return nil, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return nil, c.errorf(k, ptr, "must be a number")
	}
	r, ok := ratOf(n)
	if !ok {
		return nil, c.errorf(k, ptr, "must be a number")
	}
	return r, nil
}

func (c *conv) numberExpr(o *object, ptr string, integer bool) (string, error) {
	var rs [4]*big.Rat
	for i, k := range boundKeys {
		r, err := c.bound(o, k, ptr)
		if err != nil {
			return "", err
		}
		rs[i] = r
	}
	// the tighter of each pair of bounds, and the keyword that wrote it
	lo, loExcl, loK, hi, hiExcl, hiK := tighterBounds(rs)
	loKey, hiKey := boundKeys[loK], boundKeys[hiK]
	// unsatKey names the bounds that no number meets
	unsatKey := func() string {
		if lo != nil {
			return loKey
		}
		return hiKey
	}
	fracDigits := -1 // -1: any fraction; k: at most k significant fraction digits
	// mult: a multipleOf for the remainder automaton (multipleExpr)
	var mult *big.Rat
	m, err := c.bound(o, "multipleOf", ptr)
	if err != nil {
		return "", err
	}
	if m != nil {
		if m.Sign() <= 0 {
			return "", c.errorf("multipleOf", ptr, "must be greater than 0")
		}
		inv := new(big.Rat).Inv(m)
		k, pow := decimalPower(inv)
		switch {
		case integer && inv.IsInt():
			// every integer is a multiple of 1/n
		case !integer && pow:
			fracDigits = k
		default:
			mult = m
		}
	}
	if f, ok := o.val("format").(string); ok && integer {
		if r, ok := numericFormats[f]; ok && r[0] != "" {
			flo, _ := new(big.Rat).SetString(r[0])
			fhi, _ := new(big.Rat).SetString(r[1])
			if lo == nil || flo.Cmp(lo) > 0 {
				lo, loExcl, loKey = flo, false, "format"
			}
			if hi == nil || fhi.Cmp(hi) < 0 {
				hi, hiExcl, hiKey = fhi, false, "format"
			}
		}
	}
	if !integer && fracDigits >= 0 && (lo != nil && !lo.IsInt() || hi != nil && !hi.IsInt()) {
		mult = m // the automaton makes bounds that are not integers exact
	}
	if mult != nil {
		x, ok, err := c.multipleExpr(mult, lo, hi, loExcl, hiExcl, integer, ptr)
		if err != nil || ok {
			return x, err
		}
		// Lenient: the multipleOf is ignored (listed by multipleExpr)
	}
	if integer {
		if lo == nil && hi == nil {
			return primRef(c.b, "integer"), nil // with a zero fraction under ExactTypes
		}
		var ilo, ihi *big.Int
		if lo != nil {
			if loExcl {
				ilo = new(big.Int).Add(ratFloor(lo), bigOne)
			} else {
				ilo = ratCeil(lo)
			}
		}
		if hi != nil {
			if hiExcl {
				ihi = new(big.Int).Sub(ratCeil(hi), bigOne)
			} else {
				ihi = ratFloor(hi)
			}
		}
		x, ok := intRangeExpr(ilo, ihi, c.cfg.maxIntDigits)
		if !ok {
			return "", c.unsatf(unsatKey(), ptr, "no integer lies within the bounds")
		}
		if c.cfg.exactTypes {
			x = seq(group(x), `("." "0"+)?`) // 4.0 is an integer
		}
		return c.named("integer-range", x), nil
	}
	for lo != nil && !lo.IsInt() || hi != nil && !hi.IsInt() {
		// exact through an automaton over the digits (a multipleOf that
		// limits the fraction went to multipleExpr above)
		x, drop, err := c.decimalRangeExpr(lo, hi, loExcl, hiExcl, loKey, hiKey, ptr)
		if err != nil || drop == 0 {
			return x, err
		}
		// Lenient: a bound too long for the automaton is not enforced
		// (listed by decimalRangeExpr), the other one still is
		if drop < 0 {
			lo = nil
		} else {
			hi = nil
		}
	}
	if lo == nil && hi == nil && fracDigits < 0 {
		return primRef(c.b, "number"), nil
	}
	var ilo, ihi *big.Int
	if lo != nil {
		ilo = new(big.Int).Set(lo.Num())
	}
	if hi != nil {
		ihi = new(big.Int).Set(hi.Num())
	}
	frac := primRef(c.b, "fracnz")
	switch {
	case fracDigits == 0:
		frac = ""
	case fracDigits > 0:
		frac = seq(repeat("[0-9]", 0, fracDigits-1), `[1-9] "0"*`)
	}
	x, ok := numberRangeExpr(ilo, ihi, loExcl, hiExcl, frac)
	if !ok {
		return "", c.unsatf(unsatKey(), ptr, "no number lies within the bounds")
	}
	return c.named("number-range", x), nil
}

// decimalPower reports whether r is 10^k for some k >= 0.
func decimalPower(r *big.Rat) (int, bool) {
	if !r.IsInt() {
		return 0, false
	}
	s := r.Num().String()
	if s[0] != '1' || strings.Trim(s[1:], "0") != "" || len(s) > 30 {
		return 0, false
	}
	return len(s) - 1, true
}

// ---- strings ----

// capLength applies the length cap (WithLengthCap) to a maxLength that the
// grammar must write as a count: above it the grammar refuses the longer
// strings (still sound, but narrower than the schema), and the cap is listed
// in the returned []Ignored with Narrowed set, in every mode.
func (c *conv) capLength(maxL int, ptr string) int {
	lc := c.cfg.lengthCap
	if lc <= 0 || maxL <= lc {
		return maxL
	}
	c.noteNarrowed("maxLength", ptr, fmt.Sprintf("maxLength %d is above the length cap %d (WithLengthCap): strings longer than %d characters are refused", maxL, lc, lc))
	return lc
}

// minLengthTooLarge fails a minLength above the length cap.
func (c *conv) minLengthTooLarge(minL int, ptr string) error {
	if lc := c.cfg.lengthCap; lc > 0 && minL > lc {
		return c.errorf("minLength", ptr, "minLength %d is above the length cap %d (WithLengthCap): the grammar would write that many copies", minL, lc)
	}
	return nil
}

func (c *conv) stringExpr(o *object, ptr string) (string, error) {
	minL, err := c.countKeyword(o, "minLength", ptr, 0)
	if err != nil {
		return "", err
	}
	maxL, err := c.countKeyword(o, "maxLength", ptr, -1)
	if err != nil {
		return "", err
	}
	if maxL >= 0 && maxL < minL {
		return "", c.unsatf("maxLength", ptr, "maxLength %d is less than minLength %d", maxL, minL)
	}
	q := gbnf.QuoteLiteral(`"`)
	if fv, ok := o.get("format"); ok {
		fs, _ := fv.(string)
		if f, known := formats[fs]; known {
			if o.has("pattern") {
				if err := c.unsupported("pattern", ptr, "a pattern together with a format cannot be enforced"); err != nil {
					return "", err
				}
			}
			if minL > f.minLen || maxL >= 0 && (f.maxLen < 0 || f.maxLen > maxL) {
				if err := c.unsupported("maxLength", ptr, "length limits on a "+fs+" string cannot be enforced"); err != nil {
					return "", err
				}
			}
			return seq(q, formatRef(c.b, f), q), nil
		}
		if assertedFormat(fs) {
			if err := c.unsupported("format", ptr, "format "+strconv.Quote(fs)+" cannot be enforced"); err != nil {
				return "", err
			}
		}
		// other formats are annotations: validators ignore formats they do not know
	}
	if o.has(morePatternsKey) || o.has(notStringsKey) {
		if o.has("format") {
			if err := c.unsupported("format", ptr, "a format together with negated or several patterns cannot be enforced"); err != nil {
				return "", err
			}
		}
		body, err := c.stringDFA(o, minL, maxL, ptr)
		if err != nil {
			return "", err
		}
		return seq(q, group(body), q), nil
	}
	if pv, ok := o.get("pattern"); ok {
		ps, isStr := pv.(string)
		if !isStr {
			return "", c.errorf("pattern", ptr, "must be a string")
		}
		body, err := c.patternBody(ps, minL, maxL, ptr)
		if err != nil {
			return "", err
		}
		return seq(q, group(body), q), nil
	}
	// A plain string's length bounds are one counted repetition, which costs the
	// same for any count: maxLength needs no cap. Only the minimum is bounded, by
	// the largest count a grammar may require (llama.cpp's limit).
	if minL > gbnf.DefaultMaxRepeat {
		return "", c.errorf("minLength", ptr, "minLength %d is above %d, the largest count a grammar may require", minL, gbnf.DefaultMaxRepeat)
	}
	if minL == 0 && maxL < 0 {
		return primRef(c.b, "string"), nil
	}
	return seq(q, repeat(primRef(c.b, "char"), minL, maxL), q), nil
}

// patternBody converts a JSON Schema pattern (ECMA-262, unanchored) into the
// grammar of a JSON string's content, intersected with the length limits when
// that can be done exactly.
func (c *conv) patternBody(p string, minL, maxL int, ptr string) (string, error) {
	fail := func(err error) (string, error) {
		if uerr := c.unsupported("pattern", ptr, err.Error()); uerr != nil {
			return "", uerr
		}
		return repeat(primRef(c.b, "char"), 0, -1), nil
	}
	gp, err := ecmaToGo(p)
	if err != nil {
		return fail(&RegexError{Pattern: p, Msg: err.Error()})
	}
	re, err := parseRegex(gp, p)
	if err != nil {
		return fail(err)
	}
	rc := &regexConv{b: c.b, pattern: p, json: true}
	if minL > 0 || maxL >= 0 {
		lo, hi := patternLen(re)
		if !(lo >= minL && (maxL < 0 || hi >= 0 && hi <= maxL)) {
			if x, ok, err := c.lengthPattern(rc, re, minL, maxL); err != nil {
				if isUnsat(err) {
					return "", c.unsatf("maxLength", ptr, "no string satisfies both the pattern and the length limits")
				}
				return fail(err)
			} else if ok {
				return x, nil
			}
			if err := c.minLengthTooLarge(minL, ptr); err != nil {
				return "", err
			}
			x, err := c.lengthDFA(rc, p, minL, c.capLength(maxL, ptr), ptr)
			if err == nil || isUnsat(err) {
				return x, err
			}
			if err := c.unsupported("maxLength", ptr, "length limits together with this pattern cannot be enforced: "+err.Error()); err != nil {
				return "", err
			}
		}
	}
	x, err := rc.top(re, false)
	if err != nil {
		return fail(err)
	}
	return x, nil
}

// lengthDFA intersects a pattern's automaton with the length limits (a
// counter of code points beside each state) and writes the result. Results
// are memoized in c.strings (under keys that begin with 'L', which
// stringDFAKey's never do): schemas repeat a pattern with its limits at every
// place that uses it, and each automaton costs about a millisecond.
func (c *conv) lengthDFA(rc *regexConv, p string, minL, maxL int, ptr string) (string, error) {
	key := "L" + strconv.Itoa(minL) + " " + strconv.Itoa(maxL) + " " + p
	if x, ok := c.strings[key]; ok {
		return x, nil
	}
	d, err := patternDFA(p)
	if err != nil {
		return "", err
	}
	d = d.minimize()
	ld, err := product([]*dfa{d}, func(s []int32) bool { return d.states[s[0]].accept }, nil, minL, maxL)
	if err != nil {
		return "", err
	}
	if ld.empty() {
		return "", c.unsatf("maxLength", ptr, "no string satisfies both the pattern and the length limits")
	}
	// no minimization here: the counter makes states distinct, and Moore's
	// refinement would need a round per count
	x := ld.grammar(rc, "pattern")
	c.strings[key] = x
	return x, nil
}

// stringDFA writes the strings that match every pattern (pattern and
// morePatterns), none of the negated patterns or strings (notStrings), within
// the length limits, as one automaton.
func (c *conv) stringDFA(o *object, minL, maxL int, ptr string) (string, error) {
	var pos, neg []*dfa
	var pats []any
	if pv, ok := o.get("pattern"); ok {
		pats = append(pats, pv)
	}
	more, _ := o.val(morePatternsKey).([]any)
	pats = append(pats, more...)
	nots, _ := o.val(notStringsKey).([]any)
	key, memo := stringDFAKey(pats, nots, minL, maxL)
	if x, ok := c.strings[key]; memo && ok {
		// The same checks as the first time, for this place's pointer.
		if err := c.minLengthTooLarge(minL, ptr); err != nil {
			return "", err
		}
		if maxL >= 0 {
			c.capLength(maxL, ptr)
		}
		return x, nil
	}
	fail := func(kw string, err error) (string, error) {
		if uerr := c.unsupported(kw, ptr, err.Error()); uerr != nil {
			return "", uerr
		}
		return repeat(primRef(c.b, "char"), 0, -1), nil
	}
	for _, p := range pats {
		ps, ok := p.(string)
		if !ok {
			return "", c.errorf("pattern", ptr, "must be a string")
		}
		d, err := patternDFA(ps)
		if err != nil {
			return fail("pattern", err)
		}
		pos = append(pos, d.minimize())
	}
	for _, n := range nots {
		switch n := n.(type) {
		case string:
			d, err := patternDFA(n)
			if err != nil {
				return fail("not", err)
			}
			neg = append(neg, d.minimize())
		case []any:
			var names []string
			for _, x := range n {
				if s, ok := x.(string); ok && utf8.ValidString(s) {
					names = append(names, s)
				}
			}
			neg = append(neg, namesDFA(names))
		}
	}
	if err := c.minLengthTooLarge(minL, ptr); err != nil {
		return "", err
	}
	if maxL >= 0 {
		maxL = c.capLength(maxL, ptr)
	}
	all := append(append([]*dfa(nil), pos...), neg...)
	np := len(pos)
	accept := func(st []int32) bool {
		for i, s := range st {
			acc := s >= 0 && all[i].states[s].accept
			if i < np && !acc || i >= np && acc {
				return false
			}
		}
		return true
	}
	live := func(st []int32) bool {
		for i := 0; i < np; i++ {
			if st[i] < 0 {
				return false
			}
		}
		return true
	}
	d, err := product(all, accept, live, minL, maxL)
	if err != nil {
		return fail("pattern", fmt.Errorf("the patterns and limits of this string cannot be enforced together: %v", err))
	}
	if d.empty() {
		return "", c.unsatf("pattern", ptr, "no string satisfies the patterns and limits together")
	}
	rc := &regexConv{b: c.b, json: true}
	var x string
	if minL > 0 || maxL >= 0 {
		x = d.grammar(rc, "string") // see lengthDFA
	} else {
		x = d.minimize().grammar(rc, "string")
	}
	if memo {
		c.strings[key] = x
	}
	return x, nil
}

// stringDFAKey is the memo key of stringDFA's inputs (memo false when an input is
// not a string, which stringDFA reports as an error).
func stringDFAKey(pats, nots []any, minL, maxL int) (key string, memo bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %d", minL, maxL)
	str := func(tag byte, s string) {
		fmt.Fprintf(&b, " %c%d:%s", tag, len(s), s)
	}
	for _, p := range pats {
		s, ok := p.(string)
		if !ok {
			return "", false
		}
		str('p', s)
	}
	for _, n := range nots {
		switch n := n.(type) {
		case string:
			str('n', n)
		case []any:
			b.WriteString(" [")
			for _, x := range n {
				if s, ok := x.(string); ok {
					str('s', s)
				}
			}
			b.WriteString(" ]")
		default:
			return "", false
		}
	}
	return b.String(), true
}

// patternLen is the range of lengths of the strings a pattern matches (hi -1:
// unbounded), counting the text an unanchored pattern may have around it.
func patternLen(re *syntax.Regexp) (int, int) {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	branches := []*syntax.Regexp{re}
	if re.Op == syntax.OpAlternate {
		branches = re.Sub
	}
	lo, hi := -1, 0
	for _, br := range branches {
		parts := []*syntax.Regexp{br}
		if br.Op == syntax.OpConcat {
			parts = br.Sub
		}
		begin, end := false, false
		if len(parts) > 0 && isBegin(parts[0]) {
			begin = true
		}
		if len(parts) > 0 && isEnd(parts[len(parts)-1]) {
			end = true
		}
		l, h := regexLen(br)
		if !begin || !end {
			h = -1
		}
		if lo < 0 || l < lo {
			lo = l
		}
		if h < 0 || hi < 0 {
			hi = -1
		} else if h > hi {
			hi = h
		}
	}
	return lo, hi
}

// regexLen is the range of lengths a regex node matches (hi -1: unbounded).
func regexLen(re *syntax.Regexp) (int, int) {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune), len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1, 1
	case syntax.OpCapture:
		return regexLen(re.Sub[0])
	case syntax.OpStar:
		return 0, -1
	case syntax.OpPlus:
		l, _ := regexLen(re.Sub[0])
		return l, -1
	case syntax.OpQuest:
		_, h := regexLen(re.Sub[0])
		return 0, h
	case syntax.OpRepeat:
		l, h := regexLen(re.Sub[0])
		lo := l * re.Min
		if re.Max < 0 || h < 0 {
			return lo, -1
		}
		return lo, h * re.Max
	case syntax.OpConcat:
		lo, hi := 0, 0
		for _, s := range re.Sub {
			l, h := regexLen(s)
			lo += l
			if h < 0 || hi < 0 {
				hi = -1
			} else {
				hi += h
			}
		}
		return lo, hi
	case syntax.OpAlternate:
		lo, hi := -1, 0
		for _, s := range re.Sub {
			l, h := regexLen(s)
			if lo < 0 || l < lo {
				lo = l
			}
			if h < 0 || hi < 0 {
				hi = -1
			} else if h > hi {
				hi = h
			}
		}
		return max(lo, 0), hi
	}
	return 0, 0
}

// lengthPattern handles a fully anchored pattern made of fixed-length parts and
// one repetition of a single character: the length limits then become bounds of
// that repetition.
func (c *conv) lengthPattern(rc *regexConv, re *syntax.Regexp, minL, maxL int) (string, bool, error) {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	parts := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		parts = re.Sub
	}
	if len(parts) < 2 || !isBegin(parts[0]) || !isEnd(parts[len(parts)-1]) {
		return "", false, nil
	}
	parts = parts[1 : len(parts)-1]
	fixed, rep := 0, -1
	for i, p := range parts {
		l, h := regexLen(p)
		if l == h {
			fixed += l
			continue
		}
		if rep >= 0 {
			return "", false, nil
		}
		sub := p.Sub
		if len(sub) != 1 {
			return "", false, nil
		}
		if sl, sh := regexLen(sub[0]); sl != 1 || sh != 1 {
			return "", false, nil
		}
		rep = i
	}
	if rep < 0 {
		return "", false, nil
	}
	p := parts[rep]
	var lo, hi int
	switch p.Op {
	case syntax.OpStar:
		lo, hi = 0, -1
	case syntax.OpPlus:
		lo, hi = 1, -1
	case syntax.OpQuest:
		lo, hi = 0, 1
	case syntax.OpRepeat:
		lo, hi = p.Min, p.Max
	default:
		return "", false, nil
	}
	lo = max(lo, minL-fixed)
	if maxL >= 0 && (hi < 0 || hi > maxL-fixed) {
		hi = maxL - fixed
	}
	if hi >= 0 && hi < lo {
		return "", false, c.unsatf("maxLength", "", "no string satisfies both the pattern and the length limits")
	}
	if lc := c.cfg.lengthCap; lc > 0 && (lo > lc || hi > lc) {
		return "", false, nil // too long to count: the automaton decides
	}
	var xs []string
	for i, q := range parts {
		if i == rep {
			x, _, err := rc.conv(q.Sub[0], max(hi, lo, 1))
			if err != nil {
				return "", false, err
			}
			xs = append(xs, repeat(x, lo, hi))
			continue
		}
		x, _, err := rc.conv(q, 1)
		if err != nil {
			return "", false, err
		}
		xs = append(xs, x)
	}
	s := seq(xs...)
	if s == "" {
		s = `""`
	}
	return s, true, nil
}

// notTypes reads the forms of "not" a grammar can enforce: not true / not {}
// (all: nothing matches), not false (nothing excluded), and not {"type": ...}
// (those types are excluded).
func notTypes(nv any) (excluded []string, all, ok bool) {
	switch v := nv.(type) {
	case bool:
		return nil, v, true
	case *object:
		var keys []string
		for _, k := range v.keys {
			if isConstraining(k) {
				keys = append(keys, k)
			}
		}
		switch {
		case len(keys) == 0:
			return nil, true, true
		case len(keys) == 1 && keys[0] == "type":
			tl := typeList(v.val("type"))
			for _, t := range tl {
				if !validType(t) {
					return nil, false, false
				}
			}
			return tl, false, tl != nil
		}
	}
	return nil, false, false
}

// removeTypes drops excluded types from types; ok is false when the result is
// not a list of types (number without its integers).
func removeTypes(types, excluded []string) ([]string, bool) {
	ex := map[string]bool{}
	for _, t := range excluded {
		ex[t] = true
	}
	var out []string
	for _, t := range types {
		switch {
		case ex[t], t == "integer" && ex["number"]:
		case t == "number" && ex["integer"]:
			return nil, false
		default:
			out = append(out, t)
		}
	}
	return out, true
}

// vacuous reports keyword values that constrain nothing (true, {}, [], 0), so
// that they do not restrict the inferred type: {"additionalProperties": true}
// accepts any value, not only objects.
func vacuous(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case *object:
		return len(v.keys) == 0
	case []any:
		return len(v) == 0
	case json.Number:
		return v == "0"
	}
	return false
}

// keepEqual returns the values of vals equal (as JSON) to cv.
func keepEqual(vals []any, cv any) []any {
	var keep []any
	for _, v := range vals {
		if sameValue(v, cv) {
			keep = append(keep, v)
		}
	}
	return keep
}

// maxConstCheckDepth bounds the nesting checkConst follows.
const maxConstCheckDepth = 16

// checkConst reports whether the constant v is an instance of schema s;
// decided is false when it cannot tell (combinators, references, ...).
func (c *conv) checkConst(v, s any, depth int) (ok, decided bool) {
	if depth > maxConstCheckDepth {
		return false, false
	}
	switch s := s.(type) {
	case bool:
		return s, true
	case *object:
		if ok, decided := c.checkApplicators(v, s, depth); !decided || !ok {
			return ok, decided
		}
		if tv, has := s.get("type"); has {
			tl := typeList(tv)
			if tl == nil {
				return false, false
			}
			if s.val("nullable") == true {
				tl = append(tl, "null")
			}
			if k := jsonKind(v); !hasType(tl, k) && !(k == "integer" && hasType(tl, "number")) {
				return false, true
			}
		}
		if vals, has := c.constValues(s); has {
			if len(keepEqual(vals, v)) == 0 {
				return false, true
			}
		}
		return c.checkValue(v, s)
	}
	return false, false
}

// checkObjectConst checks a constant object against o's object keywords.
// checkApplicators decides the keywords of s that apply subschemas to v as a
// whole ($ref, allOf, anyOf, oneOf, not, if/then/else, and the groups merge
// collected) on the value v; the rest is checkConst's.
func (c *conv) checkApplicators(v any, s *object, depth int) (ok, decided bool) {
	all := func(subs []any) (bool, bool) {
		for _, sub := range subs {
			if ok, decided := c.checkConst(v, sub, depth+1); !decided || !ok {
				return ok, decided
			}
		}
		return true, true
	}
	count := func(subs []any) (n int, decided bool) {
		for _, sub := range subs {
			ok, decided := c.checkConst(v, sub, depth+1)
			if !decided {
				return 0, false
			}
			if ok {
				n++
			}
		}
		return n, true
	}
	for _, k := range s.keys {
		sub := s.val(k)
		ok, decided := true, true
		switch k {
		case "$ref":
			t, _, err := c.resolve(s, "")
			if err != nil {
				return false, false
			}
			ok, decided = c.checkConst(v, t, depth+1)
		case "$dynamicRef", "$recursiveRef", conflictKey:
			return false, false
		case "allOf":
			list, isList := sub.([]any)
			if !isList {
				return false, false
			}
			ok, decided = all(list)
		case "anyOf", "oneOf":
			list, isList := sub.([]any)
			if !isList {
				return false, false
			}
			n, d := count(list)
			ok, decided = n >= 1 && (k == "anyOf" || n == 1), d
		case groupsKey:
			for _, g := range sub.([]altGroup) {
				n, d := count(g.branches)
				if !d {
					return false, false
				}
				if n == 0 || g.one && n > 1 {
					return false, true
				}
			}
		case "not":
			ok, decided = c.checkConst(v, sub, depth+1)
			ok = !ok
		case "if":
			iok, d := c.checkConst(v, sub, depth+1)
			if !d {
				return false, false
			}
			branch := "else"
			if iok {
				branch = "then"
			}
			if b, has := s.get(branch); has {
				ok, decided = c.checkConst(v, b, depth+1)
			}
		}
		if !decided || !ok {
			return ok, decided
		}
	}
	return true, true
}

func (c *conv) checkObjectConst(v *object, o *object) (ok, decided bool) {
	for _, k := range o.keys {
		sub := o.val(k)
		switch k {
		case "properties", "required", "additionalProperties", "patternProperties", "minProperties", "maxProperties":
		case "propertyNames":
			for _, name := range v.keys {
				if ok, decided := c.checkConst(name, sub, 1); !decided || !ok {
					return ok, decided
				}
			}
		case "dependentRequired", "dependentSchemas", "dependencies":
			deps, isObj := sub.(*object)
			if !isObj {
				return false, false
			}
			for _, name := range deps.keys {
				if !v.has(name) {
					continue
				}
				switch d := deps.val(name).(type) {
				case []any:
					for _, r := range d {
						rs, _ := r.(string)
						if !v.has(rs) {
							return false, true
						}
					}
				default:
					if k == "dependentRequired" {
						return false, false
					}
					if ok, decided := c.checkConst(v, d, 1); !decided || !ok {
						return ok, decided
					}
				}
			}
		default:
			if familyOf(k) == "object" {
				return false, false
			}
		}
	}
	if r, has := o.get("required"); has {
		arr, _ := r.([]any)
		for _, n := range arr {
			if name, _ := n.(string); !v.has(name) {
				return false, true
			}
		}
	}
	if m, has := intKeyword(o, "minProperties"); has && len(v.keys) < m {
		return false, true
	}
	if m, has := intKeyword(o, "maxProperties"); has && len(v.keys) > m {
		return false, true
	}
	props, _ := o.val("properties").(*object)
	pats, _ := o.val("patternProperties").(*object)
	addl, hasAddl := o.get("additionalProperties")
	for _, k := range v.keys {
		var subs []any
		if ps, has := props.get(k); has {
			subs = append(subs, ps)
		}
		if pats != nil {
			for _, p := range pats.keys {
				re, err := c.ecmaRegexp(p)
				if err != nil {
					return false, false
				}
				if re.MatchString(k) {
					subs = append(subs, pats.val(p))
				}
			}
		}
		if len(subs) == 0 && hasAddl {
			subs = append(subs, addl)
		}
		for _, sub := range subs {
			if ok, decided := c.checkConst(v.val(k), sub, 1); !decided || !ok {
				return ok, decided
			}
		}
	}
	return true, true
}

// checkArrayConst checks a constant array against o's array keywords.
func (c *conv) checkArrayConst(v []any, o *object) (ok, decided bool) {
	for _, k := range o.keys {
		switch k {
		case "items", "prefixItems", "minItems", "maxItems", "minContains", "maxContains":
		case "uniqueItems":
			if o.val(k) == true {
				for i := range v {
					for j := i + 1; j < len(v); j++ {
						if sameValue(v[i], v[j]) {
							return false, true
						}
					}
				}
			}
		case "contains":
			n := 0
			for _, x := range v {
				ok, decided := c.checkConst(x, o.val(k), 1)
				if !decided {
					return false, false
				}
				if ok {
					n++
				}
			}
			minC, hasMin := intKeyword(o, "minContains")
			if !hasMin {
				minC = 1
			}
			if maxC, hasMax := intKeyword(o, "maxContains"); n < minC || hasMax && n > maxC {
				return false, true
			}
		default:
			if familyOf(k) == "array" {
				return false, false
			}
		}
	}
	if m, has := intKeyword(o, "minItems"); has && len(v) < m {
		return false, true
	}
	if m, has := intKeyword(o, "maxItems"); has && len(v) > m {
		return false, true
	}
	pre, _ := o.val("prefixItems").([]any)
	items, hasItems := o.get("items")
	if _, isArr := items.([]any); isArr {
		return false, false // draft-4 tuple form: flatten normalizes it; be safe
	}
	for i, x := range v {
		var sub any
		switch {
		case i < len(pre):
			sub = pre[i]
		case hasItems:
			sub = items
		default:
			continue
		}
		if ok, decided := c.checkConst(x, sub, 1); !decided || !ok {
			return ok, decided
		}
	}
	return true, true
}
