package schema

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tetherlm/tether/gocore/gbnf"
	"github.com/tetherlm/tether/gocore/safecall"
)

// FromJSONSchema converts a JSON Schema document into GBNF text whose root rule
// accepts JSON texts of instances the schema accepts (see the package doc for
// where the grammar is narrower). Keywords that cannot be enforced fail the
// conversion with a *SchemaError, or, with Lenient, are listed in ignored.
func FromJSONSchema(schema []byte, opts ...Option) (grammar string, ignored []Ignored, err error) {
	rules, _, ignored, err := convert(schema, opts, false)
	if err != nil {
		return "", nil, err
	}
	return gbnf.Text(rules), ignored, nil
}

// Grammar converts a JSON Schema document as FromJSONSchema does and returns the
// grammar parsed as well as its text: the same result as gbnf.Parse(text).
// Convert does the same without writing the text unless asked for it.
//
//	g, text, ignored, err := schema.Grammar([]byte(`{"type":"integer"}`))
//	// g feeds engine.Compile; text is what `tether gbnf` prints
func Grammar(schema []byte, opts ...Option) (g *gbnf.Grammar, text string, ignored []Ignored, err error) {
	c, err := Convert(schema, opts...)
	if err != nil {
		return nil, "", nil, err
	}
	return c.Grammar, c.Text(), c.Ignored, nil
}

// Converted is a JSON Schema converted and parsed (see Convert).
type Converted struct {
	// Grammar is the grammar, parsed: what gbnf.Parse(Text()) returns.
	Grammar *gbnf.Grammar
	// Ignored lists the keywords left unenforced (with Lenient).
	Ignored []Ignored
	rules   []gbnf.RuleText
}

// Text is the grammar's GBNF text (what FromJSONSchema returns and `tether gbnf`
// prints), written on each call.
func (c *Converted) Text() string { return gbnf.Text(c.rules) }

// Rules is the grammar rule by rule, root first (gbnf.Text(Rules()) is Text()).
func (c *Converted) Rules() []gbnf.RuleText { return c.rules }

// Convert converts a JSON Schema document as FromJSONSchema does and hands the
// grammar over parsed, without writing its text and parsing that: the converter
// gives its rules to gbnf.ParseRules directly. Text() writes the text when a
// caller wants it, byte for byte what FromJSONSchema returns. Errors from
// parsing are gbnf's.
//
//	c, err := schema.Convert([]byte(`{"type":"integer"}`))
//	// c.Grammar feeds engine.Compile; c.Text() is what `tether gbnf` prints
func Convert(schema []byte, opts ...Option) (*Converted, error) {
	rules, g, ignored, err := convert(schema, opts, true)
	if err != nil {
		return nil, err
	}
	return &Converted{Grammar: g, Ignored: ignored, rules: rules}, nil
}

// convert converts a schema into rules (root first: gbnf.Text(rules) is the
// grammar's text); parsed is the grammar parsed when parse is set, else nil
// (or the grammar when checkProductive parsed it).
func convert(schema []byte, opts []Option, parse bool) (rules []gbnf.RuleText, parsed *gbnf.Grammar, ignored []Ignored, err error) {
	defer func() {
		if r := recover(); r != nil {
			rules, parsed, ignored, err = nil, nil, nil, &SchemaError{Msg: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	doc, keys, err := decodeJSONKeys(schema)
	if err != nil {
		return nil, nil, nil, &SchemaError{Msg: "the schema is not valid JSON: " + err.Error()}
	}
	// Large schemas make about one rule per 64 bytes (kb_1161: 938 KB, 14k
	// rules): the builder's maps start near their final size instead of
	// doubling a dozen times.
	c := &conv{root: doc, refs: map[string]string{}, refErrs: map[string]error{}, strings: map[string]string{}, regions: map[string]*keyRegions{}, b: newBuilder(len(schema) / 64)}
	c.cfg = newConfig(opts)
	c.b.cfg = c.cfg
	if len(c.cfg.resources) > 0 {
		if c.extra, err = decodeResources(c.cfg.resources); err != nil {
			return nil, nil, nil, err
		}
	}
	if len(c.extra) > 0 || needsIdentifiers(schema, c.cfg.draft, keys) {
		resolveIdentifiers(doc, c.cfg.draft, c.extra)
	}
	expr, err := c.visit(doc, "", "root")
	if err != nil {
		return nil, nil, nil, err
	}
	if expr == "" {
		expr = `""`
	}
	c.b.define("root", expr)
	if c.b.size > maxGrammarBytes {
		return nil, nil, nil, &SchemaError{Msg: fmt.Sprintf("the grammar would exceed %d bytes", maxGrammarBytes)}
	}
	// What only the conversion needed (the decoded schema, the converter's
	// memos, the builder's maps other than its rules) is garbage from here:
	// a big schema's parse below then grows the heap less.
	c.root, c.extra, c.strings, c.flatMemo, c.regions, c.runeExprs, c.regexps = nil, nil, nil, nil, nil, nil, nil
	c.b.byBody, c.b.used, c.b.next, c.b.classes, c.b.names = nil, nil, nil, nil, nil
	// Only a recursive grammar can have rules that never finish (a
	// definition that must contain itself), and only one with a class that
	// matches nothing can have dead ends: those are checked on the parsed
	// grammar (checkProductive).
	check := func(rules []gbnf.RuleText) bool {
		return c.recursive || slices.ContainsFunc(rules, func(r gbnf.RuleText) bool { return strings.Contains(r.Body, noMatch) })
	}
	// settled: checkProductive ran on the grammar kept, or check said it
	// need not
	settled := false
	// The grammar lists the rules the root reaches (ruleList). Nearly always
	// that is every rule defined (all but 20 of the 4,594 grammars of the dev
	// split and the official suite): then the rules are parsed as they were
	// defined, and the parsed grammar shows that the root reaches each, which
	// costs a walk of its references by index instead of a search of every
	// body's text for names. (A reference the parse drops, as in x{0}, only
	// sends a grammar to the search.)
	if parse {
		all := c.b.allRules("root")
		// The checks gbnf.Parse makes that cannot fail here are skipped: the
		// converter writes no left recursion (see ref), and a grammar that
		// does not go through checkProductive has no dead end (no
		// recursion, no class that matches nothing). engine.Compile makes
		// its own.
		if g, err := gbnf.ParseRules(all, gbnf.AllowDeadEnds(), gbnf.AssumeNoLeftRecursion()); err == nil {
			if check(all) {
				// its walk of the reachable rules tells whether all are
				p, ok, err := c.checkProductive(all, g, len(all))
				if err != nil {
					return nil, nil, nil, err
				}
				if ok {
					rules, parsed, settled = all, p, true
				}
			} else if reachesAll(g, len(all)) {
				rules, parsed, settled = all, g, true
			}
		}
	}
	if rules == nil {
		rules = c.b.ruleList("root")
	}
	c.b = nil
	if !settled && check(rules) {
		if parsed, _, err = c.checkProductive(rules, nil, 0); err != nil {
			return nil, nil, nil, err
		}
	} else if parse && parsed == nil {
		if parsed, err = gbnf.ParseRules(rules, gbnf.AllowDeadEnds(), gbnf.AssumeNoLeftRecursion()); err != nil {
			return nil, nil, nil, err
		}
	}
	return rules, parsed, c.ignored, nil
}

// reachesAll reports whether the root of g reaches each of its first n rules
// (those written) through references.
func reachesAll(g *gbnf.Grammar, n int) bool {
	return !slices.Contains(gbnf.WalkReachable(g, g.Root, nil)[:n], false)
}

// conv is the state of one conversion.
type conv struct {
	cfg     config
	root    any
	extra   []resource // WithResources' documents, at root pointers /\x01r/<i>
	b       *builder
	refs    map[string]string // JSON pointer of a $ref target -> its rule
	refErrs map[string]error  // JSON pointer of a $ref target that failed -> why
	// strings memoizes stringDFA by its inputs (one automaton per distinct set of
	// patterns, excluded strings and length limits, however many places use it)
	// and keyExcept by its names ("keyExcept\x00" and the sorted names) and its
	// key characters by the characters excluded ("kother\x00" and the runes); no
	// stringDFA key starts with "k". The number automata (numbers.go) are
	// memoized here too, by keys starting with "number\x00".
	strings map[string]string
	// runeExprs: keyRune's expressions, by character
	runeExprs map[rune]string
	regions   map[string]*keyRegions    // patternKV's key regions by patterns and names
	regexps   map[string]compiledRegexp // ecmaRegexp's memo, by ECMA pattern
	// recursive is set when a $ref was reached while its target was being
	// converted: only then can a rule fail to produce any finite text.
	recursive bool
	ignored   []Ignored
	depth     int
	// leftEdge holds the $ref targets being converted at whose start no text
	// has been matched yet: reaching one again there is left recursion.
	leftEdge map[string]bool
	// combos > 0 while visitGroups converts combinations, whose merged
	// schemas repeat (a oneOf made exclusive merges each branch with the
	// negations of the others, and their properties' schemas recur from
	// combination to combination); flatMemo holds what visitFlat made of
	// each there (see flatKey).
	combos   int
	flatMemo map[string]string
	keyBuf   []byte
}

func (c *conv) errorf(keyword, ptr, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if uri, rest, ok := c.remotePointer(ptr); ok {
		ptr, msg = rest, "in the resource "+uri+": "+msg
	}
	return &SchemaError{Keyword: keyword, Pointer: ptr, Msg: msg}
}

// remotePointer splits a root pointer into a WithResources document into the
// document's URI and the pointer inside it.
func (c *conv) remotePointer(ptr string) (uri, rest string, ok bool) {
	n, rest, ok := remoteIndex(ptr, len(c.extra))
	if !ok {
		return "", "", false
	}
	return c.extra[n].uri, rest, true
}

// unsupported reports a keyword the grammar cannot enforce: an error, or with
// Lenient an entry in ignored (and nil).
func (c *conv) unsupported(keyword, ptr, reason string) error {
	if c.cfg.lenient {
		for _, ig := range c.ignored {
			if ig.Keyword == keyword && ig.Pointer == ptr {
				return nil
			}
		}
		ig := Ignored{Keyword: keyword, Pointer: ptr, Reason: reason}
		if uri, rest, ok := c.remotePointer(ptr); ok {
			ig.Pointer, ig.Reason = rest, "in the resource "+uri+": "+reason
		}
		c.ignored = append(c.ignored, ig)
		return nil
	}
	return c.errorf(keyword, ptr, "%s", reason)
}

// noteNarrowed lists a keyword the grammar enforces more strictly than the
// schema (a cap), once per place.
func (c *conv) noteNarrowed(keyword, ptr, reason string) {
	for _, ig := range c.ignored {
		if ig.Keyword == keyword && ig.Pointer == ptr {
			return
		}
	}
	c.ignored = append(c.ignored, Ignored{Keyword: keyword, Pointer: ptr, Reason: reason, Narrowed: true})
}

func (c *conv) ws() string { return primRef(c.b, "ws") }

// inside runs f after an opening "{" or "[": references reached there are no
// longer at the left edge of the rules that contain them.
func (c *conv) inside(f func() error) error {
	saved := c.leftEdge
	c.leftEdge = nil
	err := f()
	c.leftEdge = saved
	return err
}

// maxDepth bounds the nesting of schemas the converter follows.
const maxDepth = 200

// visit converts a schema (object or boolean) and returns a GBNF expression.
func (c *conv) visit(s any, ptr, hint string) (string, error) {
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > maxDepth {
		return "", c.errorf("", ptr, "schemas nest deeper than %d", maxDepth)
	}
	if c.b.size > maxGrammarBytes {
		return "", c.errorf("", ptr, "the grammar would exceed %d bytes", maxGrammarBytes)
	}
	switch v := s.(type) {
	case bool:
		if v {
			return primRef(c.b, "value"), nil
		}
		return "", c.unsatf("", ptr, "the schema false accepts nothing")
	case *object:
		if isPureRef(v) {
			return c.ref(v, ptr, hint)
		}
		o, err := c.flatten(v, ptr, 0)
		if err != nil {
			return "", err
		}
		return c.visitFlat(o, ptr, hint)
	}
	return "", c.errorf("", ptr, "a schema must be an object or a boolean, not %s", jsonKind(s))
}

// annotations are keywords that never constrain an instance.
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "example": true,
	"$schema": true, "$id": true, "id": true, "$comment": true, "readOnly": true, "writeOnly": true,
	"deprecated": true, "$anchor": true, "$dynamicAnchor": true, "$vocabulary": true,
	"definitions": true, "$defs": true, "contentEncoding": true, "contentMediaType": true,
	"contentSchema": true, "discriminator": true,
}

// isConstraining reports whether keyword k can constrain instances (as opposed
// to annotations and unknown vocabulary).
func isConstraining(k string) bool {
	if familyOf(k) != "" {
		return true
	}
	switch k {
	case "type", "enum", "const", "allOf", "anyOf", "oneOf", "$ref", "nullable", "format",
		"not", "if", "then", "else", "$dynamicRef", "$recursiveRef":
		return true
	}
	return strings.HasPrefix(k, "\x00")
}

// isPureRef: a $ref with nothing else that constrains.
func isPureRef(o *object) bool {
	if _, ok := o.get("$ref"); !ok {
		return false
	}
	for _, k := range o.keys {
		if k != "$ref" && isConstraining(k) {
			return false
		}
	}
	return true
}

// ref returns the rule of a $ref target, converting it the first time.
func (c *conv) ref(o *object, ptr, hint string) (string, error) {
	target, tptr, err := c.resolve(o, ptr)
	if err != nil {
		return "", err
	}
	if err, ok := c.refErrs[tptr]; ok {
		return "", err
	}
	if name, ok := c.refs[tptr]; ok {
		if c.leftEdge[tptr] {
			return "", c.errorf("$ref", ptr, "the reference #%s leads back to itself before any text is matched (left recursion)", tptr)
		}
		if _, done := c.b.rules[name]; !done {
			c.recursive = true
		}
		return name, nil
	}
	base := tptr
	if i := strings.LastIndexByte(tptr, '/'); i >= 0 {
		base = tptr[i+1:]
	}
	if base == "" {
		base = "ref"
	}
	name := c.b.reserve(base)
	c.refs[tptr] = name
	if c.leftEdge == nil {
		c.leftEdge = map[string]bool{}
	}
	c.leftEdge[tptr] = true
	expr, err := c.visit(target, tptr, name)
	delete(c.leftEdge, tptr)
	if err != nil {
		// Every later reference fails the same way; rules written while
		// converting the target may name the rule, but only this conversion
		// reached them, so they are left out of the grammar (builder.text
		// writes the rules reachable from the root).
		delete(c.refs, tptr)
		c.refErrs[tptr] = err
		return "", err
	}
	if expr == name || expr == "" {
		return "", c.errorf("$ref", ptr, "the reference #%s refers only to itself", tptr)
	}
	c.b.define(name, expr)
	return name, nil
}

// resolve follows the $ref of o to the value it names and its pointer.
func (c *conv) resolve(o *object, ptr string) (any, string, error) {
	rv, _ := o.get("$ref")
	ref, ok := rv.(string)
	if !ok {
		return nil, "", c.errorf("$ref", ptr, "must be a string")
	}
	i := strings.IndexByte(ref, '#')
	if i < 0 || i > 0 {
		return nil, "", c.errorf("$ref", ptr, "the reference %q names no schema of this document (other documents are not fetched)", ref)
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return nil, "", c.errorf("$ref", ptr, "bad reference %q: %v", ref, err)
	}
	if frag != "" && frag[0] != '/' {
		return nil, "", c.errorf("$ref", ptr, "the reference %q names no $anchor of this document", ref)
	}
	cur, rest := c.pointerStart(frag)
	if cur == nil && rest == "" {
		return nil, "", c.errorf("$ref", ptr, "the reference %q names nothing in this document", ref)
	}
	cur, ok = walkPointer(cur, rest, nil)
	if !ok {
		return nil, "", c.errorf("$ref", ptr, "the reference %q names nothing in this document", ref)
	}
	return cur, frag, nil
}

// escPtr escapes one JSON pointer segment.
func escPtr(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// maxFlatten bounds the chain of $ref and allOf that flatten inlines.
const maxFlatten = 24

// flatten inlines $ref (beside other keywords) and allOf into one object, and
// rewrites draft-specific spellings (items as an array, boolean exclusive
// bounds) into the 2020-12 ones.
func (c *conv) flatten(o *object, ptr string, depth int) (*object, error) {
	if depth > maxFlatten {
		return nil, c.errorf("$ref", ptr, "$ref and allOf nest more than %d deep (a recursive reference combined with other keywords?)", maxFlatten)
	}
	var later *object // unevaluated* keywords applied after the merge (deferUnevaluated)
	if o.has("unevaluatedProperties") || o.has("unevaluatedItems") {
		o, later = c.deferUnevaluated(o)
	}
	res := normalize(o)
	res.del("$ref")
	res.del("allOf")
	var err error
	if _, ok := o.get("$ref"); ok {
		t, tptr, err := c.resolve(o, ptr)
		if err != nil {
			return nil, err
		}
		switch t := t.(type) {
		case bool:
			if !t {
				return nil, c.unsatf("$ref", ptr, "refers to the schema false, which accepts nothing")
			}
		case *object:
			ft, err := c.flatten(t, tptr, depth+1)
			if err != nil {
				return nil, err
			}
			if res, err = c.merge(ft, res, ptr); err != nil {
				return nil, err
			}
		default:
			return nil, c.errorf("$ref", ptr, "refers to %s, which is not a schema", jsonKind(t))
		}
	}
	if nv, ok := o.get("not"); ok {
		if rw, ok := c.rewriteNot(nv, 0); ok {
			res.del("not")
			switch rw := rw.(type) {
			case bool:
				if !rw {
					return nil, c.unsatf("not", ptr, "not excludes every instance")
				}
			case *object:
				fr, err := c.flatten(rw, ptr, depth+1)
				if err != nil {
					return nil, err
				}
				if res, err = c.merge(res, fr, ptr); err != nil {
					return nil, err
				}
			}
		}
	}
	if iv, ok := o.get("if"); ok && (o.has("then") || o.has("else")) {
		// if I then T else E  =  (I and T) or (not I and E), where not I is exact
		if negI, ok := c.rewriteNot(iv, 1); ok {
			tv, hasT := o.get("then")
			ev, hasE := o.get("else")
			if !hasT {
				tv = true
			}
			if !hasE {
				ev = true
			}
			g := newObject()
			g.set("anyOf", []any{allOfList(iv, tv), allOfList(negI, ev)})
			fg, err := c.flatten(g, ptr, depth+1)
			if err != nil {
				return nil, err
			}
			res.del("if")
			res.del("then")
			res.del("else")
			if res, err = c.merge(res, fg, ptr); err != nil {
				return nil, err
			}
		}
	}
	for _, kw := range []string{"dependencies", "dependentRequired", "dependentSchemas"} {
		dv, ok := o.get(kw)
		if !ok {
			continue
		}
		groups, ok := dependencyGroups(o, kw, dv)
		if !ok {
			continue // checkUnsupported reports it
		}
		res.del(kw)
		for _, g := range groups {
			fg, err := c.flatten(g, ptr+"/"+kw, depth+1)
			if err != nil {
				return nil, err
			}
			if res, err = c.merge(res, fg, ptr+"/"+kw); err != nil {
				return nil, err
			}
		}
	}
	if av, ok := o.get("allOf"); ok {
		subs, ok := av.([]any)
		if !ok {
			return nil, c.errorf("allOf", ptr, "must be an array of schemas")
		}
		for i, s := range subs {
			sp := ptr + "/allOf/" + strconv.Itoa(i)
			switch s := s.(type) {
			case bool:
				if !s {
					return nil, c.unsatf("allOf", sp, "the schema false accepts nothing")
				}
			case *object:
				fs, err := c.flatten(s, sp, depth+1)
				if err != nil {
					return nil, err
				}
				if res, err = c.merge(res, fs, sp); err != nil {
					return nil, err
				}
			default:
				return nil, c.errorf("allOf", sp, "a schema must be an object or a boolean")
			}
		}
	}
	if later != nil {
		res = res.clone()
		for _, k := range later.keys {
			res.set(k, later.val(k))
		}
	}
	return res, err
}

// deferUnevaluated handles unevaluatedProperties and unevaluatedItems where
// every subschema that can evaluate a property or item is merged by flatten
// itself: o and the allOf and $ref subschemas it reaches, with no anyOf,
// oneOf, not, if, dependentSchemas, contains or dynamic reference among them
// (their annotations depend on which of them match, or they give none). Then
// the properties evaluated are exactly those the merged schema names in
// properties and patternProperties (or all of them, when one of the parts has
// additionalProperties or its own unevaluatedProperties), and the items
// evaluated those of the longest prefixItems (or all, when one has items or
// its own unevaluatedItems). So the keyword becomes additionalProperties
// (items) of the merged schema, set after the merge (later), or nothing when
// everything is evaluated. Otherwise normalize turns it into
// additionalProperties (items) of o alone, which is narrower: still sound.
func (c *conv) deferUnevaluated(o *object) (rest, later *object) {
	propsAll, itemsAll := false, false
	var scan func(s any, top bool, depth int) bool
	scan = func(s any, top bool, depth int) bool {
		x, ok := s.(*object)
		if !ok {
			return true // a boolean schema evaluates nothing
		}
		if depth > maxFlatten {
			return false
		}
		for _, k := range x.keys {
			switch k {
			case "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies", "contains",
				"$dynamicRef", "$recursiveRef", groupsKey, conflictKey:
				return false
			case "additionalProperties":
				propsAll = true
			case "unevaluatedProperties":
				if !top {
					propsAll = true
				}
			case "additionalItems":
				itemsAll = true
			case "unevaluatedItems":
				if !top {
					itemsAll = true
				}
			case "items":
				if _, tuple := x.val(k).([]any); !tuple {
					itemsAll = true
				}
			case "allOf":
				list, ok := x.val(k).([]any)
				if !ok {
					return false
				}
				for _, sub := range list {
					if !scan(sub, false, depth+1) {
						return false
					}
				}
			case "$ref":
				t, _, err := c.resolve(x, "")
				if err != nil || !scan(t, false, depth+1) {
					return false
				}
			}
		}
		return true
	}
	if !scan(o, true, 0) {
		return o, nil
	}
	rest, later = o.clone(), newObject()
	if u, ok := o.get("unevaluatedProperties"); ok {
		rest.del("unevaluatedProperties")
		if !propsAll {
			later.set("additionalProperties", u)
		}
	}
	if u, ok := o.get("unevaluatedItems"); ok {
		rest.del("unevaluatedItems")
		if !itemsAll {
			later.set("items", u)
		}
	}
	return rest, later
}

// normalize returns a copy of o with draft 4-7 spellings rewritten.
func normalize(o *object) *object {
	r := o.clone()
	if it, ok := r.get("items"); ok {
		if arr, ok := it.([]any); ok {
			r.del("items")
			r.set("prefixItems", arr)
			if ai, ok := r.get("additionalItems"); ok {
				r.set("items", ai)
			}
		}
	}
	r.del("additionalItems")
	if pi, ok := r.get("prefixItems"); ok {
		if _, isArr := pi.([]any); !isArr {
			// llama.cpp reads a schema-valued prefixItems as items
			r.del("prefixItems")
			if _, has := r.get("items"); !has {
				r.set("items", pi)
			}
		}
	}
	for _, kw := range [][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
		if v, ok := r.get(kw[0]); ok {
			if bv, isBool := v.(bool); isBool {
				r.del(kw[0])
				if bv {
					if m, ok := r.get(kw[1]); ok {
						r.del(kw[1])
						r.set(kw[0], m)
					}
				}
			}
		}
	}
	if u, ok := r.get("unevaluatedProperties"); ok {
		r.del("unevaluatedProperties")
		if _, has := r.get("additionalProperties"); !has {
			r.set("additionalProperties", u)
		}
	}
	if u, ok := r.get("unevaluatedItems"); ok {
		r.del("unevaluatedItems")
		if _, has := r.get("items"); !has {
			r.set("items", u)
		}
	}
	return r
}

// allOfSchema is a schema requiring both a and b (nil means no constraint).
func allOfSchema(a, b any) any {
	switch {
	case a == nil || a == true:
		return b
	case b == nil || b == true:
		return a
	case a == false || b == false:
		return false
	}
	if sameValue(a, b) {
		return a
	}
	o := newObject()
	o.set("allOf", []any{a, b})
	return o
}

// group is one anyOf or oneOf: an instance must match one branch (oneOf: exactly one).
type altGroup struct {
	one      bool
	branches []any
	ptr      string
}

const groupsKey = "\x00groups"
const conflictKey = "\x00conflict"

// Private keywords for string constraints decided by automata: morePatterns
// holds further patterns a string must match (allOf of patterns), notStrings
// what it must not be: a pattern (string) it must not match, or a list of
// strings ([]any) it must not equal.
const (
	morePatternsKey = "\x00patterns"
	notStringsKey   = "\x00notStrings"
)

// merge combines two flattened schemas into one that accepts exactly the
// instances both accept (or records a conflict that visitFlat reports).
func (c *conv) merge(a, b *object, ptr string) (*object, error) {
	out := a.clone()
	conflict := func(k string) {
		if _, ok := out.get(conflictKey); !ok {
			out.set(conflictKey, k+"\x00"+ptr)
		}
	}
	for _, k := range b.keys {
		bv := b.val(k)
		av, ok := out.get(k)
		switch k {
		case "properties", "patternProperties", "additionalProperties":
			continue // mergeObject
		case "anyOf", "oneOf":
			if arr, ok := bv.([]any); ok {
				gs, _ := out.get(groupsKey)
				list, _ := gs.([]altGroup)
				out.set(groupsKey, append(append([]altGroup(nil), list...), altGroup{one: k == "oneOf", branches: arr, ptr: ptr + "/" + k}))
			} else {
				conflict(k)
			}
			continue
		case morePatternsKey, notStringsKey:
			prev, _ := out.get(k)
			list, _ := prev.([]any)
			more, _ := bv.([]any)
			out.set(k, append(append([]any(nil), list...), more...))
			continue
		case "pattern":
			if av, has := out.get(k); has && !sameValue(av, bv) {
				prev, _ := out.get(morePatternsKey)
				list, _ := prev.([]any)
				out.set(morePatternsKey, append(append([]any(nil), list...), bv))
				continue
			}
		case groupsKey:
			gs, _ := out.get(groupsKey)
			list, _ := gs.([]altGroup)
			out.set(groupsKey, append(append([]altGroup(nil), list...), bv.([]altGroup)...))
			continue
		}
		if !ok {
			out.set(k, bv)
			continue
		}
		if sameValue(av, bv) {
			continue
		}
		switch k {
		case "type":
			at, bt := typeList(av), typeList(bv)
			if at == nil || bt == nil {
				conflict(k)
				continue
			}
			out.set(k, toAny(intersectTypes(at, bt)))
		case "required":
			ar, _ := av.([]any)
			br, _ := bv.([]any)
			seen := map[string]bool{}
			var u []any
			for _, x := range append(append([]any{}, ar...), br...) {
				if s, ok := x.(string); ok && !seen[s] {
					seen[s] = true
					u = append(u, s)
				}
			}
			out.set(k, u)
		case "enum":
			ae, _ := av.([]any)
			be, _ := bv.([]any)
			keys := map[string]bool{}
			for _, x := range be {
				keys[valueKey(x)] = true
			}
			var in []any
			for _, x := range ae {
				if keys[valueKey(x)] {
					in = append(in, x)
				}
			}
			out.set(k, append([]any{}, in...))
		case "const":
			out.set("enum", []any{}) // two different constants: nothing matches
		case "minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties":
			if numLess(av, bv) {
				out.set(k, bv)
			}
		case "maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties":
			if numLess(bv, av) {
				out.set(k, bv)
			}
		case "items", "propertyNames":
			out.set(k, allOfSchema(av, bv))
		case "prefixItems":
			ap, _ := av.([]any)
			bp, _ := bv.([]any)
			ai, _ := a.get("items")
			bi, _ := b.get("items")
			n := max(len(ap), len(bp))
			m := make([]any, n)
			for i := range n {
				x, y := ai, bi
				if i < len(ap) {
					x = ap[i]
				}
				if i < len(bp) {
					y = bp[i]
				}
				m[i] = allOfSchema(x, y)
			}
			out.set(k, m)
		case "nullable":
			out.set(k, av == true && bv == true)
		case "uniqueItems":
			out.set(k, av == true || bv == true)
		case "multipleOf":
			if m, ok := lcmMultiple(av, bv); ok {
				out.set(k, m)
			} else {
				conflict(k)
			}
		default:
			if isConstraining(k) {
				conflict(k)
			}
		}
	}
	// an items schema on a side without prefixItems applies to every position
	if pv, ok := out.get("prefixItems"); ok {
		pre, _ := pv.([]any)
		pre = append([]any(nil), pre...)
		for _, side := range []*object{a, b} {
			it, hasItems := side.get("items")
			if _, hasPre := side.get("prefixItems"); hasItems && !hasPre {
				for i := range pre {
					pre[i] = allOfSchema(pre[i], it)
				}
			}
		}
		out.set("prefixItems", pre)
	}
	if err := c.mergeObject(a, b, out, ptr); err != nil {
		return nil, err
	}
	return out, nil
}

// mergeObject combines properties, patternProperties and additionalProperties:
// a property named on one side only must satisfy what the other side says of
// unnamed properties.
func (c *conv) mergeObject(a, b, out *object, ptr string) error {
	ap, _ := a.get("properties")
	bp, _ := b.get("properties")
	apat, aHasPat := a.get("patternProperties")
	bpat, bHasPat := b.get("patternProperties")
	aadd, aHasAdd := a.get("additionalProperties")
	badd, bHasAdd := b.get("additionalProperties")
	if !aHasPat && !bHasPat && !aHasAdd && !bHasAdd && (ap == nil || bp == nil) {
		if bp != nil {
			out.set("properties", bp)
		}
		return nil
	}
	if (aHasPat && (bHasPat || bHasAdd && badd != true)) || (bHasPat && aHasAdd && aadd != true) {
		if !sameValue(apat, bpat) || !sameValue(aadd, badd) {
			out.set(conflictKey, "patternProperties\x00"+ptr)
			return nil
		}
	}
	apo, _ := ap.(*object)
	bpo, _ := bp.(*object)
	props := newObject()
	var names []string
	if apo != nil {
		names = append(names, apo.keys...)
	}
	if bpo != nil {
		for _, k := range bpo.keys {
			if !apo.has(k) {
				names = append(names, k)
			}
		}
	}
	for _, n := range names {
		sa, ina := apo.get(n)
		sb, inb := bpo.get(n)
		var err error
		if !ina {
			if sa, err = c.unnamedSchema(a, n, ptr); err != nil {
				return err
			}
		}
		if !inb {
			if sb, err = c.unnamedSchema(b, n, ptr); err != nil {
				return err
			}
		}
		m := allOfSchema(sa, sb)
		if m == nil {
			m = true
		}
		props.set(n, m)
	}
	if len(names) > 0 {
		out.set("properties", props)
	}
	if bHasPat {
		out.set("patternProperties", bpat)
	}
	if aHasAdd && bHasAdd {
		out.set("additionalProperties", allOfSchema(aadd, badd))
	} else if bHasAdd {
		out.set("additionalProperties", badd)
	}
	return nil
}

// unnamedSchema is what schema o requires of property name when it does not
// list it: the matching patternProperties, else additionalProperties (nil: nothing).
func (c *conv) unnamedSchema(o *object, name, ptr string) (any, error) {
	if pp, ok := o.get("patternProperties"); ok {
		ppo, _ := pp.(*object)
		var s any
		matched := false
		for _, p := range ppo.keys {
			re, err := c.ecmaRegexp(p)
			if err != nil {
				return nil, c.errorf("patternProperties", ptr, "pattern %q: %v", p, err)
			}
			if re.MatchString(name) {
				matched = true
				s = allOfSchema(s, ppo.val(p))
			}
		}
		if matched {
			return s, nil
		}
	}
	if ad, ok := o.get("additionalProperties"); ok {
		return ad, nil
	}
	return nil, nil
}

// typeList reads a "type" value (nil if malformed).
func typeList(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := []string{}
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil
			}
			out = append(out, s)
		}
		return out
	}
	return nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// intersectTypes intersects two type lists; integer is a subset of number.
func intersectTypes(a, b []string) []string {
	has := func(l []string, t string) bool {
		for _, x := range l {
			if x == t {
				return true
			}
		}
		return false
	}
	var out []string
	for _, t := range a {
		switch {
		case has(b, t):
			out = append(out, t)
		case t == "number" && has(b, "integer"), t == "integer" && has(b, "number"):
			if !has(out, "integer") {
				out = append(out, "integer")
			}
		}
	}
	return out
}

// numLess compares two JSON numbers (false if either is not one).
func numLess(a, b any) bool {
	an, ok1 := a.(json.Number)
	bn, ok2 := b.(json.Number)
	if !ok1 || !ok2 {
		return false
	}
	ar, ok1 := ratOf(an)
	br, ok2 := ratOf(bn)
	return ok1 && ok2 && ar.Cmp(br) < 0
}

// parallelCheckFrom is the number of rules from which checkProductive runs
// gbnf.Productive on a goroutine of its own.
const parallelCheckFrom = 1024

// checkProductive refuses a grammar in which a $ref target's rule cannot derive
// any finite text (a schema such as {"type":"array","items":{"$ref":"#"},
// "minItems":1} requires an infinitely deep instance): its grammar would let a
// model start a value it can never finish.
//
// It returns the parsed grammar: its checks are gbnf.Parse's dead-end check (a
// reachable rule that derives nothing, a reachable class that matches nothing;
// the converter writes no raw bytes), so the grammar is what gbnf.Parse returns.
//
// g is the grammar parsed, or nil to parse rules. With written > 0 the root
// must reach the first written rules (every rule defined, see convert):
// where it does not, checkProductive reports !reached and checks nothing.
// (The walk reads all the rules the root reaches before any check, so that
// its verdicts are those of the grammar without the rules left over.)
func (c *conv) checkProductive(rules []gbnf.RuleText, g *gbnf.Grammar, written int) (parsed *gbnf.Grammar, reached bool, err error) {
	if g == nil {
		if g, err = gbnf.ParseRules(rules, gbnf.AllowDeadEnds(), gbnf.AssumeNoLeftRecursion()); err != nil {
			return nil, false, &SchemaError{Msg: "internal error: the generated grammar does not parse: " + err.Error()}
		}
	}
	// Productivity (a fixpoint over the rules) and the walk of the rules the root
	// reaches read the grammar only: a large grammar's run side by side.
	var productive []bool
	wait := func() {}
	if len(g.Rules) < parallelCheckFrom {
		productive = gbnf.Productive(g)
	} else {
		wait = safecall.Go(func() { productive = gbnf.Productive(g) })
	}
	// The rules the root reaches, and whether one of them holds a class that
	// matches nothing.
	emptyClass := false
	seen := gbnf.WalkReachable(g, g.Root, func(_, _, _ int, e *gbnf.Element) bool {
		emptyClass = emptyClass || e.Kind == gbnf.Char && gbnf.ClassEmpty(e.Ranges, e.Negated)
		return true
	})
	wait()
	if written > 0 && slices.Contains(seen[:written], false) {
		return nil, false, nil
	}
	ptrs := make([]string, 0, len(c.refs))
	for p := range c.refs {
		ptrs = append(ptrs, p)
	}
	sort.Strings(ptrs)
	for _, p := range ptrs {
		if i, ok := g.Index[c.refs[p]]; ok && !productive[i] {
			return nil, false, c.errorf("$ref", p, "this schema accepts no finite instance: every instance would have to contain another instance of it")
		}
	}
	if !productive[g.Root] {
		if !c.recursive {
			return nil, false, c.errorf("", "", "the schema accepts no instance (a pattern that matches nothing?)")
		}
		return nil, false, c.errorf("", "", "the schema accepts no finite instance")
	}
	// a rule reachable from the root that derives nothing, or a class there
	// that matches nothing, is a dead end: a model could start it and never
	// finish (a pattern that matches nothing under an optional property)
	deadEnd := emptyClass
	for r, ok := range seen {
		deadEnd = deadEnd || ok && !productive[r]
	}
	if deadEnd {
		return nil, false, c.errorf("", "", "a part of this schema accepts no value (a pattern that matches nothing?); the grammar would let a model start it and never finish")
	}
	return g, true, nil
}

// rewriteNot expresses "not x" as a positive schema where that is exact:
// not not X is X; not {required: [a, b]} is an object lacking a or b (a
// non-object satisfies "required", so it fails "not required"); not anyOf is
// allOf of the negations and not allOf anyOf of them; a schema of several
// independent keywords is the anyOf of their negations; inside those, not {}
// is false, not {type: T} the other types, and bounds flip (not maximum m is a
// number above m, not maxLength n a string longer than n, ...); a $ref is
// negated through its target. Other forms are left to visitFlat.
func (c *conv) rewriteNot(x any, depth int) (any, bool) {
	if depth > 8 {
		return nil, false
	}
	switch x := x.(type) {
	case bool:
		if depth == 0 {
			return nil, false
		}
		return !x, true
	case *object:
		var keys []string
		for _, k := range x.keys {
			if isConstraining(k) {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			if depth == 0 {
				return nil, false
			}
			return false, true
		}
		if len(keys) > 1 {
			// keywords that are not independent conjuncts: negating them one by
			// one would not be exact ($ref siblings are ignored by drafts <= 7)
			if x.has("$ref") || x.has("nullable") || x.has("additionalProperties") || x.has("patternProperties") ||
				x.has("prefixItems") || x.has("additionalItems") || x.has("items") || x.has("if") {
				return nil, false
			}
			var alts []any
			for _, k := range keys {
				one := newObject()
				one.set(k, x.val(k))
				rw, ok := c.rewriteNot(one, depth+1)
				if !ok {
					return nil, false
				}
				if rw == false {
					continue
				}
				alts = append(alts, rw)
			}
			if len(alts) == 0 {
				return false, true
			}
			o := newObject()
			o.set("anyOf", alts)
			return o, true
		}
		k := keys[0]
		v := x.val(k)
		typed := func(t, kw string, val any) (any, bool) {
			o := newObject()
			o.set("type", t)
			o.set(kw, val)
			return o, true
		}
		num := func() (json.Number, bool) {
			n, ok := v.(json.Number)
			return n, ok
		}
		count := func() (int, bool) {
			n, ok := intKeyword(x, k)
			return n, ok && n < 1<<30
		}
		switch k {
		case "not":
			return v, true
		case "pattern":
			if _, ok := v.(string); !ok {
				return nil, false
			}
			return typed("string", notStringsKey, []any{v})
		case "enum", "const":
			vals := []any{v}
			if k == "enum" {
				arr, ok := v.([]any)
				if !ok {
					return nil, false
				}
				vals = arr
			}
			var strs []any
			others := map[string]bool{}
			bools := map[bool]bool{}
			var nums []json.Number
			for _, x := range vals {
				switch x := x.(type) {
				case string:
					strs = append(strs, x)
				case nil:
					others["null"] = true
				case bool:
					bools[x] = true
				case json.Number:
					if _, ok := ratOf(x); !ok {
						return nil, false
					}
					nums = append(nums, x)
				default:
					return nil, false // objects, arrays: no exact complement here
				}
			}
			if len(bools) > 0 {
				others["boolean"] = true
			}
			if len(nums) > 0 {
				others["number"] = true
			}
			if len(strs) == 0 {
				others["string"] = false // every string is outside the values
			} else {
				others["string"] = true // strings: those that are not among them (below)
			}
			var rest []any
			for _, t := range allTypes {
				if t != "integer" && !others[t] {
					rest = append(rest, t)
				}
			}
			var alts []any
			if len(rest) > 0 {
				ot := newObject()
				ot.set("type", rest)
				alts = append(alts, ot)
			}
			if len(bools) == 1 {
				b := newObject()
				b.set("const", !bools[true])
				alts = append(alts, b)
			}
			// numbers: the open intervals between the excluded values
			sort.Slice(nums, func(i, j int) bool { return numLess(nums[i], nums[j]) })
			for i := 0; i <= len(nums) && len(nums) > 0; i++ {
				if i > 0 && i < len(nums) && !numLess(nums[i-1], nums[i]) {
					continue // equal values
				}
				iv := newObject()
				iv.set("type", "number")
				if i > 0 {
					iv.set("exclusiveMinimum", nums[i-1])
				}
				if i < len(nums) {
					iv.set("exclusiveMaximum", nums[i])
				}
				alts = append(alts, iv)
			}
			if len(strs) > 0 {
				st := newObject()
				st.set("type", "string")
				st.set(notStringsKey, []any{strs})
				alts = append(alts, st)
			}
			if len(alts) == 1 {
				return alts[0], true
			}
			o := newObject()
			o.set("anyOf", alts)
			return o, true
		case "$ref":
			t, _, err := c.resolve(x, "")
			if err != nil {
				return nil, false
			}
			return c.rewriteNot(t, depth+1)
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			n, ok := num()
			if !ok {
				return nil, false
			}
			flip := map[string]string{"minimum": "exclusiveMaximum", "maximum": "exclusiveMinimum",
				"exclusiveMinimum": "maximum", "exclusiveMaximum": "minimum"}[k]
			return typed("number", flip, n)
		case "minLength", "minItems", "minProperties":
			n, ok := count()
			if !ok {
				return nil, false
			}
			if n == 0 {
				return false, true
			}
			t := map[string]string{"minLength": "string", "minItems": "array", "minProperties": "object"}[k]
			return typed(t, "max"+k[3:], json.Number(strconv.Itoa(n-1)))
		case "maxLength", "maxItems", "maxProperties":
			n, ok := count()
			if !ok {
				return nil, false
			}
			t := map[string]string{"maxLength": "string", "maxItems": "array", "maxProperties": "object"}[k]
			return typed(t, "min"+k[3:], json.Number(strconv.Itoa(n+1)))
		case "properties":
			props, ok := v.(*object)
			if !ok {
				return nil, false
			}
			var alts []any
			for _, p := range props.keys {
				neg, ok := c.rewriteNot(props.val(p), depth+1)
				if !ok {
					return nil, false
				}
				if neg == false {
					continue
				}
				ps := newObject()
				ps.set(p, neg)
				o := newObject()
				o.set("type", "object")
				o.set("required", []any{p})
				o.set("properties", ps)
				alts = append(alts, o)
			}
			if len(alts) == 0 {
				return false, true
			}
			o := newObject()
			o.set("anyOf", alts)
			return o, true
		case "type":
			if depth == 0 {
				return nil, false // visitFlat's notTypes
			}
			ex, _, ok := notTypes(x)
			if !ok {
				return nil, false
			}
			rest, ok := removeTypes(allTypes, ex)
			if !ok {
				return nil, false
			}
			if len(rest) == 0 {
				return false, true
			}
			o := newObject()
			o.set("type", toAny(rest))
			return o, true
		case "required":
			names, ok := v.([]any)
			if !ok || len(names) == 0 {
				return nil, false
			}
			var alts []any
			for _, n := range names {
				name, ok := n.(string)
				if !ok {
					return nil, false
				}
				props := newObject()
				props.set(name, false)
				a := newObject()
				a.set("properties", props)
				alts = append(alts, a)
			}
			o := newObject()
			o.set("type", "object")
			if len(alts) == 1 {
				o.set("properties", alts[0].(*object).val("properties"))
			} else {
				o.set("anyOf", alts)
			}
			return o, true
		case "anyOf", "allOf":
			subs, ok := v.([]any)
			if !ok || len(subs) == 0 {
				return nil, false
			}
			var out []any
			for _, sub := range subs {
				rw, ok := c.rewriteNot(sub, depth+1)
				if !ok {
					return nil, false
				}
				out = append(out, rw)
			}
			o := newObject()
			if k == "anyOf" {
				o.set("allOf", out)
			} else {
				o.set("anyOf", out)
			}
			return o, true
		}
	}
	return nil, false
}

// dependencyGroups rewrites dependencies (dependentRequired, dependentSchemas)
// as anyOf groups, exactly: {"a": ["b"]} is "a is absent, or a and b are
// present" (or the instance is not an object); {"a": S} is "a is absent, or a
// is present and the object satisfies S".
func dependencyGroups(o *object, kw string, dv any) ([]*object, bool) {
	deps, ok := dv.(*object)
	if !ok {
		return nil, false
	}
	onlyObjects := o.val("type") == "object"
	var out []*object
	for _, prop := range deps.keys {
		absentProps := newObject()
		absentProps.set(prop, false)
		absent := newObject()
		absent.set("properties", absentProps)
		var present *object
		switch v := deps.val(prop).(type) {
		case []any:
			if kw == "dependentSchemas" {
				return nil, false
			}
			req := []any{prop}
			for _, x := range v {
				if _, ok := x.(string); !ok {
					return nil, false
				}
				req = append(req, x)
			}
			present = newObject()
			present.set("required", req)
		case bool, *object:
			if kw == "dependentRequired" {
				return nil, false
			}
			r := newObject()
			r.set("required", []any{prop})
			present = newObject()
			present.set("allOf", []any{r, v})
		default:
			return nil, false
		}
		alts := []any{absent, present}
		if !onlyObjects {
			other := newObject()
			other.set("type", []any{"array", "string", "number", "boolean", "null"})
			alts = append(alts, other)
		}
		g := newObject()
		g.set("anyOf", alts)
		out = append(out, g)
	}
	return out, true
}

// allOfList is {"allOf": [a, b]}.
func allOfList(a, b any) *object {
	o := newObject()
	o.set("allOf", []any{a, b})
	return o
}
