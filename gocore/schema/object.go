package schema

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// maxPropertyCount bounds minProperties/maxProperties that are enforced by
// counting (the grammar grows with properties x count).
const maxPropertyCount = 64

type namedProp struct {
	name     string
	schema   any
	required bool
	ptr      string
}

// objectExpr: properties (in the schema's order), required, additionalProperties,
// patternProperties, propertyNames, minProperties, maxProperties.
func (c *conv) objectExpr(o *object, ptr, hint string) (string, error) {
	var props *object
	if pv, ok := o.get("properties"); ok {
		po, ok := pv.(*object)
		if !ok {
			return "", c.errorf("properties", ptr, "must be an object")
		}
		props = po
	}
	required := map[string]bool{}
	var reqOrder []string
	if rv, ok := o.get("required"); ok {
		arr, ok := rv.([]any)
		if !ok {
			return "", c.errorf("required", ptr, "must be an array of strings")
		}
		for _, v := range arr {
			s, ok := v.(string)
			if !ok {
				return "", c.errorf("required", ptr, "must be an array of strings")
			}
			if !required[s] {
				required[s] = true
				reqOrder = append(reqOrder, s)
			}
		}
	}
	addl, hasAddl := o.get("additionalProperties")
	if !hasAddl {
		addl = !c.cfg.strictObjects
	}
	var patterns *object
	if pv, ok := o.get("patternProperties"); ok {
		po, ok := pv.(*object)
		if !ok {
			return "", c.errorf("patternProperties", ptr, "must be an object")
		}
		if len(po.keys) > 0 {
			patterns = po
		}
	}
	propNames, hasPropNames := o.get("propertyNames")

	for _, n := range append(append([]string(nil), props.names()...), reqOrder...) {
		if !utf8.ValidString(n) {
			return "", c.errorf("properties", ptr, "the property name %s holds a lone UTF-16 surrogate (a \\uD800-\\uDFFF escape without its pair): no valid JSON text contains it", jsonQuote(n))
		}
	}
	// named properties
	var named []namedProp
	seen := map[string]bool{}
	if props != nil {
		for _, n := range props.keys {
			named = append(named, namedProp{n, props.val(n), required[n], ptr + "/properties/" + escPtr(n)})
			seen[n] = true
		}
	}
	for _, n := range reqOrder {
		if !seen[n] {
			var s any = addl
			if patterns != nil {
				s = nil
				matched := false
				for _, p := range patterns.keys {
					if re, err := c.ecmaRegexp(p); err == nil && re.MatchString(n) {
						s, matched = allOfSchema(s, patterns.val(p)), true
					}
				}
				if !matched {
					s = addl
				}
				if s == nil {
					s = true
				}
			}
			named = append(named, namedProp{n, s, true, ptr + "/required"})
		}
	}
	// a named property whose name matches patterns must satisfy their schemas too
	if patterns != nil {
		for i := range named {
			if named[i].ptr == ptr+"/required" {
				continue // its schema already comes from the patterns
			}
			for _, p := range patterns.keys {
				re, err := c.ecmaRegexp(p)
				if err != nil {
					if uerr := c.unsupported("patternProperties", ptr, "pattern "+strconv.Quote(p)+": "+err.Error()); uerr != nil {
						return "", uerr
					}
					continue
				}
				if re.MatchString(named[i].name) {
					named[i].schema = allOfSchema(named[i].schema, patterns.val(p))
				}
			}
		}
	}
	// propertyNames: named properties whose names it rejects cannot appear
	if hasPropNames && propNames != true {
		var keep []namedProp
		for _, np := range named {
			ok, decided := c.checkName(propNames, np.name)
			if !decided {
				if err := c.unsupported("propertyNames", ptr, "cannot check property names against this schema"); err != nil {
					return "", err
				}
				ok = true
			}
			if ok {
				keep = append(keep, np)
			} else if np.required {
				return "", c.unsatf("propertyNames", ptr, "the required property %q has a name propertyNames rejects", np.name)
			}
		}
		named = keep
	}

	// every listed name stays out of the additional keys, even one whose schema
	// accepts nothing (it may then not appear at all)
	allNames := make([]string, len(named))
	for i, np := range named {
		allNames[i] = np.name
	}
	ws := c.ws()
	var kvs, vals []string
	var kept []namedProp
	for _, np := range named {
		if np.schema == false {
			if np.required {
				return "", c.unsatf("required", ptr, "the required property %q is not allowed", np.name)
			}
			continue
		}
		v, err := c.visit(np.schema, np.ptr, hint+"-"+np.name)
		if err != nil {
			if isUnsat(err) && !np.required {
				continue
			}
			return "", err
		}
		kvs = append(kvs, seq(gbnf.QuoteLiteral(jsonQuote(np.name)), ws, litColon, ws, v))
		vals = append(vals, v)
		kept = append(kept, np)
	}
	named = kept

	// additional properties: a key grammar and a value grammar
	addKV := ""
	switch {
	case patterns != nil:
		if hasPropNames && propNames != true {
			break // cannot intersect key patterns with propertyNames: leave them out
		}
		kv, ok, err := c.patternKV(patterns, addl, allNames, ptr, hint)
		if err != nil {
			return "", err
		}
		if ok {
			addKV = kv
			break
		}
		// keys matching a pattern, all values satisfying every pattern's
		// schema; other unnamed keys are left out (narrower, sound)
		var keyAlts []string
		var vs any
		for _, p := range patterns.keys {
			body, err := c.patternBody(p, 0, -1, ptr+"/patternProperties")
			if err != nil {
				return "", err
			}
			keyAlts = append(keyAlts, seq(gbnf.QuoteLiteral(`"`), group(body), gbnf.QuoteLiteral(`"`)))
			vs = allOfSchema(vs, patterns.val(p))
		}
		if vs == nil {
			vs = true
		}
		if hasPropNames && propNames != true {
			break // cannot intersect key patterns with propertyNames: leave them out
		}
		v, err := c.visit(vs, ptr+"/patternProperties", hint+"-pattern")
		if err != nil {
			if !isUnsat(err) {
				return "", err
			}
			break
		}
		key := c.named(hint+"-pkey", alt(keyAlts))
		addKV = seq(key, ws, litColon, ws, v)
	case addl == false:
	default:
		var key string
		if hasPropNames && propNames != true {
			if len(allNames) > 0 {
				break // would need names that propertyNames accepts minus the named ones
			}
			pn := propNames
			if pno, ok := pn.(*object); ok {
				m := pno.clone()
				m.set("type", "string")
				pn = m
			}
			k, err := c.visit(pn, ptr+"/propertyNames", hint+"-name")
			if err != nil {
				if !isUnsat(err) {
					return "", err
				}
				break
			}
			key = k
		} else if len(allNames) == 0 {
			key = primRef(c.b, "string")
		} else {
			key = c.keyExcept(allNames)
		}
		v, err := c.visit(addl, ptr+"/additionalProperties", hint+"-additional")
		if err != nil {
			if !isUnsat(err) {
				return "", err
			}
			break
		}
		addKV = seq(key, ws, litColon, ws, v)
	}

	// counts
	minP, err := c.countKeyword(o, "minProperties", ptr, 0)
	if err != nil {
		return "", err
	}
	maxP, err := c.countKeyword(o, "maxProperties", ptr, -1)
	if err != nil {
		return "", err
	}
	nreq := 0
	for _, np := range named {
		if np.required {
			nreq++
		}
	}
	if minP <= nreq {
		minP = 0
	}
	if maxP >= 0 && addKV == "" && maxP >= len(named) {
		maxP = -1
	}
	cnt := max(1, minP, maxP)
	if cnt > maxPropertyCount {
		return "", c.errorf("maxProperties", ptr, "minProperties/maxProperties above %d cannot be enforced here", maxPropertyCount)
	}
	if kvs == nil && addKV != "" {
		kvs = []string{}
	}
	ob := &objBuilder{c: c, named: named, kvs: kvs, vals: vals, addKV: addKV, minP: minP, maxP: maxP, cnt: cnt,
		memo: map[[2]int]objState{}, skipMemo: map[[2]int]objState{}, hint: hint}
	ob.planBlocks()
	body, ok := ob.state(0, 0)
	if !ok {
		return "", c.unsatf("minProperties", ptr, "no object satisfies the property counts")
	}
	return c.named(hint, seq(gbnf.QuoteLiteral("{"), ws, body, gbnf.QuoteLiteral("}"))), nil
}

type objState struct {
	expr string
	ok   bool
}

// objBuilder writes the properties after the i-th named one, having written n
// so far (n capped at cnt): a chain of rules linear in the number of
// properties (times the count cap), however many are optional.
//
// A long run of optional properties would make that chain a choice among all
// the properties left: as many stacks after every comma (10,000 optional
// properties exceeded the engine's stack limit at the first byte). Such runs
// are cut into blocks of about sqrt(run) properties: within its block the
// chain goes on, and skipping the rest of a block leads to the later blocks,
// each entered through a key trie (one stack per block). A state then holds
// about 2*sqrt(run) stacks, and the grammar stays linear.
type objBuilder struct {
	c          *conv
	named      []namedProp
	kvs        []string
	vals       []string // value grammar of each named property
	addKV      string
	minP, maxP int
	cnt        int
	memo       map[[2]int]objState
	skipMemo   map[[2]int]objState
	hint       string
	// blockEnd[i] > 0: i starts a block of a long optional run, which ends
	// before blockEnd[i]; runEnd[i] is the end of that run.
	blockEnd, runEnd []int
}

// blockRun is the length above which a run of optional properties is cut into blocks.
const blockRun = 32

// planBlocks finds the long runs of optional properties and their blocks.
func (ob *objBuilder) planBlocks() {
	n := len(ob.named)
	for s := 0; s < n; {
		if ob.named[s].required {
			s++
			continue
		}
		e := s
		for e < n && !ob.named[e].required {
			e++
		}
		if e-s > blockRun {
			if ob.blockEnd == nil {
				ob.blockEnd, ob.runEnd = make([]int, n+1), make([]int, n+1)
			}
			size := 8
			for size*size < e-s {
				size++
			}
			for b := s; b < e; b += size {
				ob.blockEnd[b] = min(b+size, e)
				for i := b; i < min(b+size, e); i++ {
					ob.runEnd[i] = e
				}
			}
		}
		s = e
	}
}

// absent is what follows when property i is left out, having written n.
func (ob *objBuilder) absent(i, n int) (string, bool) {
	if ob.blockEnd != nil && ob.runEnd[i] > 0 && ob.blockEnd[i+1] > 0 {
		return ob.skip(i+1, n)
	}
	return ob.state(i+1, n)
}

// skip: the properties from block start b on (b may be the end of the run),
// having written n: the first one written is in some block at or after b,
// found through that block's key trie.
func (ob *objBuilder) skip(b, n int) (string, bool) {
	key := [2]int{b, n}
	if s, ok := ob.skipMemo[key]; ok {
		return s.expr, s.ok
	}
	var alts []string
	next, nextOK := "", false
	if ob.blockEnd[b] == 0 {
		next, nextOK = ob.state(b, n) // the end of the run
	} else {
		next, nextOK = ob.skip(ob.blockEnd[b], n)
		if ob.maxP < 0 || n < ob.maxP {
			ws := ob.c.ws()
			var texts, conts []string
			for j := b; j < ob.blockEnd[b]; j++ {
				after, ok := ob.state(j+1, min(n+1, ob.cnt))
				if !ok {
					continue
				}
				texts = append(texts, jsonQuote(ob.named[j].name))
				conts = append(conts, seq(ws, litColon, ws, ob.vals[j], ws, after))
			}
			if len(texts) > 0 {
				sep := ""
				if n > 0 {
					sep = seq(litComma, ws)
				}
				alts = append(alts, seq(sep, ob.c.trie(texts, conts, ob.hint+"-b")))
			}
		}
	}
	var expr string
	ok := len(alts) > 0 || nextOK
	switch {
	case len(alts) == 0:
		expr = next
	case !nextOK:
		expr = alts[0]
	case next == "":
		expr = opt(alts[0])
	default:
		expr = "(" + alts[0] + " | " + next + ")"
	}
	if ok && len(expr) > 48 {
		expr = ob.c.b.rule(ob.hint+"-s"+strconv.Itoa(b), expr)
	}
	ob.skipMemo[key] = objState{expr, ok}
	return expr, ok
}

func (ob *objBuilder) state(i, n int) (string, bool) {
	key := [2]int{i, n}
	if s, ok := ob.memo[key]; ok {
		return s.expr, s.ok
	}
	expr, ok := ob.build(i, n)
	if ok && len(expr) > 48 && i < len(ob.named) {
		expr = ob.c.b.rule(ob.hint+"-p"+strconv.Itoa(i), expr)
	}
	ob.memo[key] = objState{expr, ok}
	return expr, ok
}

func (ob *objBuilder) build(i, n int) (string, bool) {
	ws := ob.c.ws()
	comma := seq(litComma, ws)
	if i == len(ob.named) {
		lo := max(0, ob.minP-n)
		hi := -1
		if ob.maxP >= 0 {
			hi = ob.maxP - n
		}
		if ob.addKV == "" || hi == 0 {
			if lo > 0 {
				return "", false
			}
			return "", true
		}
		if n == 0 {
			h := hi
			if h > 0 {
				h--
			}
			x := seq(ob.addKV, ws, repeat(seq(comma, ob.addKV, ws), max(lo-1, 0), h))
			if lo == 0 {
				return opt(x), true
			}
			return x, true
		}
		// one rule per loop, however many places end with it (every state
		// after a property of an object that allows others ends so)
		return ob.c.b.rule("more", repeat(seq(comma, ob.addKV, ws), lo, hi)), true
	}
	np := ob.named[i]
	var alts []string
	if ob.maxP < 0 || n < ob.maxP {
		if next, ok := ob.state(i+1, min(n+1, ob.cnt)); ok {
			sep := ""
			if n > 0 {
				sep = comma
			}
			alts = append(alts, seq(sep, ob.kvs[i], ws, next))
		}
	}
	absent := ""
	absentOK := false
	if !np.required {
		absent, absentOK = ob.absent(i, n)
	}
	switch {
	case len(alts) == 0 && !absentOK:
		return "", false
	case len(alts) == 0:
		return absent, true
	case !absentOK:
		return alts[0], true
	case absent == "":
		return opt(alts[0]), true
	}
	return "(" + alts[0] + " | " + absent + ")", true
}

// checkName reports whether a property name satisfies a propertyNames schema.
func (c *conv) checkName(s any, name string) (ok, decided bool) {
	switch s := s.(type) {
	case bool:
		return s, true
	case *object:
		f, err := c.flatten(s, "", 0)
		if err != nil {
			return false, false
		}
		for _, k := range f.keys {
			if isConstraining(k) && k != "type" && !stringKeywords[k] && k != "enum" && k != "const" {
				return false, false
			}
		}
		if vals, has := c.constValues(f); has {
			found := false
			for _, v := range vals {
				if v == name {
					found = true
				}
			}
			if !found {
				return false, true
			}
		}
		if tv, ok := f.get("type"); ok {
			tl := typeList(tv)
			if !hasType(tl, "string") {
				return false, true
			}
		}
		return c.checkValue(name, f)
	}
	return false, false
}

// keyExcept is the grammar of a JSON string (canonical spelling) that is none of
// names: a trie of the names, where each node may end (unless a name ends
// there) or continue with a character no name continues with.
func (c *conv) keyExcept(names []string) string {
	// One grammar per set of names, however many objects share it.
	sorted := slices.Compact(slices.Sorted(slices.Values(names)))
	key := "keyExcept\x00" + strings.Join(sorted, "\x00")
	if x, ok := c.strings[key]; ok {
		return x
	}
	x := c.keyExceptTrie(sorted)
	c.strings[key] = x
	return x
}

// keyExceptTrie writes the trie of sorted (ascending, no duplicates) bottom
// up, one rule per node. Identical subtries (the same names continue the same
// way) are one rule, within a set and across sets: builder.rule finds a body
// already written. Schemas with many objects (Kubernetes: ~300 sets of names,
// ~20,000 trie nodes, ~6,000 distinct) make this a hot path, so a node's body
// is assembled in one scratch buffer and looked up without a copy.
func (c *conv) keyExceptTrie(sorted []string) string {
	krest := primRef(c.b, "krest")
	var buf, okey []byte
	// kids is a stack: a node's children are pushed above its parent's, and
	// popped once the node's rule is written
	type kid struct {
		r    rune
		rule string
	}
	var kids []kid
	// write returns the rule of the trie node for ns, names that share their
	// first d bytes (ascending, so a name that ends at d comes first).
	var write func(ns []string, d int) string
	write = func(ns []string, d int) string {
		base := len(kids)
		end := len(ns[0]) == d
		rest := ns
		if end {
			rest = ns[1:]
		}
		for len(rest) > 0 {
			r, size := utf8.DecodeRuneInString(rest[0][d:])
			j := 1
			for j < len(rest) && strings.HasPrefix(rest[j][d:], rest[0][d:d+size]) {
				j++
			}
			rule := write(rest[:j], d+size)
			kids = append(kids, kid{r, rule})
			rest = rest[j:]
		}
		buf = buf[:0]
		if !end {
			buf = append(buf, `"\""`...)
		}
		okey = append(okey[:0], "kother\x00"...)
		for _, k := range kids[base:] {
			if len(buf) > 0 {
				buf = append(buf, " | "...)
			}
			buf = append(buf, c.keyRune(k.r)...)
			buf = append(buf, ' ')
			buf = append(buf, k.rule...)
			okey = utf8.AppendRune(okey, k.r)
		}
		// any other character, then anything: one rule per set of next
		// characters (sets repeat across the trie and across objects, and a
		// group written inline would be a helper rule per trie node)
		other, done := c.strings[string(okey)]
		if !done {
			next := make([]rune, 0, len(kids)-base)
			for _, k := range kids[base:] {
				next = append(next, k.r)
			}
			other = c.b.rule("ko", seq(c.keyOther(next), krest))
			c.strings[string(okey)] = other
		}
		kids = kids[:base]
		if len(buf) > 0 {
			buf = append(buf, " | "...)
		}
		buf = append(buf, other...)
		return c.b.ruleBytes("k", buf)
	}
	return seq(`"\""`, write(sorted, 0))
}

// keyRune is the expression of key character r, as a group (memoized: a
// trie repeats its characters).
func (c *conv) keyRune(r rune) string {
	if x, ok := c.runeExprs[r]; ok {
		return x
	}
	if c.runeExprs == nil {
		c.runeExprs = map[rune]string{}
	}
	x := group(jsonRuneExpr(r))
	c.runeExprs[r] = x
	return x
}

// keyOther is the expression of a key character that is none of runes (a
// character, or an escape, that no name continues with).
func (c *conv) keyOther(runes []rune) string {
	var plain []rng
	specials := map[rune]bool{}
	for _, r := range runes {
		if isJSONSpecial(r) {
			specials[r] = true
		} else {
			plain = append(plain, rng{Lo: r, Hi: r})
		}
	}
	excl := gbnf.NormalizeRanges(append(plain, jsonSpecialRanges...))
	other := []string{gbnf.FormatClass(subRanges(excl, surrogates), true)}
	if len(specials) == 0 {
		other = append(other, primRef(c.b, "kesc"))
	} else {
		for r := rune(0); r < 0x20; r++ {
			if !specials[r] {
				other = append(other, jsonRuneExpr(r))
			}
		}
		for _, r := range []rune{'"', '\\'} {
			if !specials[r] {
				other = append(other, jsonRuneExpr(r))
			}
		}
	}
	return "(" + alt(other) + ")"
}

// maxPatternRegions bounds the patterns whose overlaps patternKV works out.
const maxPatterns = 8

// keyRegions are the regions of object keys that a set of patterns and named
// properties make (see patternKV), worked out once per set however many objects
// share it: the automata, the signatures that occur (which patterns a key
// matches) and, per signature, the key grammar.
type keyRegions struct {
	why   error // the regions cannot be worked out
	ds    []*dfa
	nd    *dfa
	order []int          // the signatures of unnamed keys that occur, ascending
	keys  map[int]string // signature -> key grammar ("" for none), once written
	prod  *dfa           // the product of all(), untrimmed and with no accepting state
	sig   []int          // the signature of each of prod's states
}

func (kr *keyRegions) sigOf(states []int32) int {
	k := len(kr.ds)
	if s := states[k]; s >= 0 && kr.nd.states[s].accept {
		return -1 // a named property
	}
	sig := 0
	for i := 0; i < k; i++ {
		if s := states[i]; s >= 0 && kr.ds[i].states[s].accept {
			sig |= 1 << i
		}
	}
	return sig
}

func (kr *keyRegions) all() []*dfa { return append(append([]*dfa(nil), kr.ds...), kr.nd) }

func always([]int32) bool { return true }

// keyRegionsOf returns the key regions of patterns and names (memoized).
func (c *conv) keyRegionsOf(patterns, names []string) *keyRegions {
	sorted := slices.Compact(slices.Sorted(slices.Values(names)))
	mk := strings.Join(patterns, "\x00") + "\x01" + strings.Join(sorted, "\x00")
	if kr, ok := c.regions[mk]; ok {
		return kr
	}
	kr := &keyRegions{keys: map[int]string{}}
	c.regions[mk] = kr
	if len(patterns) > maxPatterns {
		kr.why = fmt.Errorf("more than %d patterns", maxPatterns)
		return kr
	}
	for _, p := range patterns {
		d, err := patternDFA(p)
		if err != nil {
			kr.why = err
			return kr
		}
		kr.ds = append(kr.ds, d.minimize())
	}
	kr.nd = namesDFA(names)
	sigs := map[int]bool{}
	prod, err := productAll(kr.all(), func(st []int32) bool {
		s := kr.sigOf(st)
		kr.sig = append(kr.sig, s) // productAll numbers states in the order it asks
		sigs[s] = true
		return false
	}, always, 0, -1)
	if err != nil {
		kr.why = err
		return kr
	}
	kr.prod = prod
	for s := range sigs {
		if s >= 0 {
			kr.order = append(kr.order, s)
		}
	}
	sort.Ints(kr.order)
	return kr
}

// key returns the grammar of the quoted keys with signature sig ("" if none).
func (kr *keyRegions) key(c *conv, sig int, hint string) (string, error) {
	if k, ok := kr.keys[sig]; ok {
		return k, nil
	}
	// the product keyRegionsOf built, accepting the states of this signature
	all := &dfa{states: make([]dstate, len(kr.prod.states))}
	for i, st := range kr.prod.states {
		all.states[i] = dstate{accept: kr.sig[i] == sig, edges: st.edges}
	}
	region := all.trim()
	k := ""
	if !region.empty() {
		rc := &regexConv{b: c.b, json: true}
		k = seq(gbnf.QuoteLiteral(`"`), region.minimize().grammar(rc, hint+"-key"), gbnf.QuoteLiteral(`"`))
	}
	kr.keys[sig] = k
	return k, nil
}

// patternKV writes the additional key-value pairs of an object with
// patternProperties exactly: a key that matches the patterns in a set S (and
// no other, and is not a named property) takes a value satisfying the schemas
// of S; a key that matches none takes additionalProperties. Each such region
// of keys is an automaton (the product of the patterns' automata and of the
// named properties' trie), so the key grammar decides the value's schema.
// ok is false when the automata would be too large (or a pattern cannot be
// made one) and the patterns all have the same schema: the caller then uses
// the narrower union of the patterns. Differing schemas are then refused.
func (c *conv) patternKV(patterns *object, addl any, names []string, ptr, hint string) (string, bool, error) {
	kr := c.keyRegionsOf(patterns.keys, names)
	if why := kr.why; why != nil {
		same := true
		for _, p := range patterns.keys {
			if !sameValue(patterns.val(p), patterns.val(patterns.keys[0])) {
				same = false
			}
		}
		if same {
			return "", false, nil
		}
		if err := c.unsupported("patternProperties", ptr, "patterns with different schemas whose overlaps cannot be worked out ("+why.Error()+")"); err != nil {
			return "", false, err
		}
		return "", false, nil
	}
	ws := c.ws()
	var alts []string
	for _, sig := range kr.order {
		var vs any
		wptr := ptr + "/additionalProperties"
		if sig == 0 {
			vs = addl
		} else {
			for i, p := range patterns.keys {
				if sig&(1<<i) != 0 {
					vs = allOfSchema(vs, patterns.val(p))
					wptr = ptr + "/patternProperties/" + escPtr(p)
				}
			}
		}
		if vs == nil {
			vs = true
		}
		if vs == false {
			continue
		}
		key, err := kr.key(c, sig, hint)
		if err != nil {
			return "", false, err
		}
		if key == "" {
			continue // no key has exactly these patterns
		}
		v, err := c.visit(vs, wptr, hint+"-v")
		if err != nil {
			if isUnsat(err) {
				continue
			}
			return "", false, err
		}
		alts = append(alts, seq(key, ws, litColon, ws, v))
	}
	if len(alts) == 0 {
		return "", true, nil
	}
	return c.named(hint+"-kv", alt(alts)), true, nil
}
