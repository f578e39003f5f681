package schema

import (
	"bytes"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// URI resolution of references.
//
// The converter resolves a "$ref" as a JSON pointer into the document
// (resolve). Before converting, resolveIdentifiers rewrites every reference
// that is not already such a pointer into one: it walks the document as a
// validator does, keeping the base URI that "$id" (draft 4: "id") sets for each
// embedded schema resource, records every resource, "$anchor" and
// "$dynamicAnchor" (and draft 6/7's "$id": "#name"), and resolves each "$ref"
// against the base URI of the schema that holds it (RFC 3986). A reference
// into an embedded resource, to an anchor, or relative to an "$id" becomes the
// root pointer of its target; the rest of the converter then never sees URIs.
// References to documents other than this one stay as they are and are
// refused by resolve (nothing is fetched).
//
// "$dynamicRef" is rewritten into a "$ref" where its target does not depend on
// the path that reaches it: when its first resolution lands on a schema without
// a "$dynamicAnchor" of that name (it is then a plain reference), when the
// root resource declares that "$dynamicAnchor" (the outermost resource of
// every dynamic scope is the root), or when one resource alone declares it.
// Any other "$dynamicRef" stays, and is refused.

// documentDraft is the dialect doc's "$schema" names, else def.
func documentDraft(doc any, def Draft) Draft {
	ro, ok := doc.(*object)
	if !ok {
		return def
	}
	v, _ := ro.get("$schema")
	s, _ := v.(string)
	switch {
	case s == "":
		return def
	case strings.Contains(s, "draft-03"), strings.Contains(s, "draft-04"):
		return Draft4
	case strings.Contains(s, "draft-06"):
		return Draft6
	case strings.Contains(s, "draft-07"):
		return Draft7
	case strings.Contains(s, "2019-09"):
		return Draft2019
	}
	return Draft2020
}

// defaultBase is the retrieval URI assumed for a document without "$id".
const defaultBase = "https://tether.invalid/schema.json"

// refIndex is what resolveIdentifiers knows of one document.
type refIndex struct {
	root      any
	extra     []resource
	legacy    bool   // draft 4 to 7: a $ref's siblings are ignored, "$id": "#name" is an anchor
	idKey     string // "$id", or "id" for draft 4 and earlier
	rootBase  string
	resources map[string]string // absolute URI (no fragment) -> root pointer
	anchors   map[string]string // absolute URI "#" name -> root pointer
	dynamic   map[string][]string
	bases     map[*object]string // each walked schema -> its base URI
	pending   []walkedRef
}

// walkedRef is a schema holding "$ref" or "$dynamicRef".
type walkedRef struct {
	o    *object
	ptr  string
	base string
}

// needsIdentifiers reports whether resolveIdentifiers can change anything: the
// document has an identifier, an anchor, a dynamic reference or a reference
// that is not a fragment, as decoding it saw its keys. A schema the direct
// scanner did not read (only one nested too deep, which decoding refuses
// anyway) resolves them regardless.
func needsIdentifiers(schema []byte, draft Draft, keys identifierKeys) bool {
	if !keys.known {
		return true
	}
	return keys.anchors || keys.id && (draft == Draft4 || bytes.Contains(schema, []byte(`draft-0`)))
}

// resource is a document given by WithResources.
type resource struct {
	uri string
	doc any
}

// remotePrefix starts the root pointer of a WithResources document: its
// first segment can name no member of a schema (it is not text anyone writes).
const remotePrefix = "/\x01r/"

func decodeResources(docs map[string][]byte) ([]resource, error) {
	uris := make([]string, 0, len(docs))
	for u := range docs {
		uris = append(uris, u)
	}
	sort.Strings(uris)
	var out []resource
	for _, u := range uris {
		pu, err := url.Parse(u)
		if err != nil || !pu.IsAbs() {
			return nil, &SchemaError{Keyword: "$ref", Msg: fmt.Sprintf("resource %q: a resource is named by an absolute URI", u)}
		}
		d, err := decodeJSON(docs[u])
		if err != nil {
			return nil, &SchemaError{Keyword: "$ref", Msg: fmt.Sprintf("resource %q is not valid JSON: %v", u, err)}
		}
		pu.Fragment, pu.RawFragment = "", ""
		out = append(out, resource{uri: pu.String(), doc: d})
	}
	return out, nil
}

// pointerStart is where root pointer p starts (the schema, or a
// WithResources document) and the rest of p.
func (c *conv) pointerStart(p string) (any, string) {
	return startOf(c.root, c.extra, p)
}

func startOf(root any, extra []resource, p string) (any, string) {
	if !strings.HasPrefix(p, remotePrefix) {
		return root, p
	}
	n, rest, ok := remoteIndex(p, len(extra))
	if !ok {
		return nil, ""
	}
	return extra[n].doc, rest
}

// remoteIndex splits root pointer p into a WithResources document (one of
// count) into the document's index and the pointer inside it.
func remoteIndex(p string, count int) (n int, rest string, ok bool) {
	if !strings.HasPrefix(p, remotePrefix) {
		return 0, "", false
	}
	r := p[len(remotePrefix):]
	i := strings.IndexByte(r, '/')
	if i < 0 {
		i = len(r)
	}
	n, err := strconv.Atoi(r[:i])
	if err != nil || n < 0 || n >= count {
		return 0, "", false
	}
	return n, r[i:], true
}

// resolveIdentifiers rewrites the references of doc (and of the documents
// in extra) in place (see above); draft is the dialect of a document whose
// "$schema" names none.
func resolveIdentifiers(doc any, draft Draft, extra []resource) {
	ix := &refIndex{root: doc, idKey: "$id", resources: map[string]string{}, anchors: map[string]string{},
		dynamic: map[string][]string{}, bases: map[*object]string{}}
	draft = documentDraft(doc, draft)
	ix.legacy = draft == Draft7 || draft == Draft6 || draft == Draft4
	if draft == Draft4 {
		ix.idKey = "id"
	}
	ix.rootBase = defaultBase
	ix.resources[defaultBase] = ""
	ix.extra = extra
	for i, r := range extra {
		ix.resources[r.uri] = remotePrefix + strconv.Itoa(i)
	}
	ix.walk(doc, "", defaultBase)
	ix.rootBase = ix.bases[asObject(doc)]
	if ix.rootBase == "" {
		ix.rootBase = defaultBase
	}
	for i, r := range extra {
		ix.walk(r.doc, remotePrefix+strconv.Itoa(i), r.uri)
	}
	for len(ix.pending) > 0 {
		r := ix.pending[0]
		ix.pending = ix.pending[1:]
		if v, ok := r.o.get("$ref"); ok {
			if s, ok := v.(string); ok {
				if tptr, ok := ix.target(s, r.base); ok {
					r.o.set("$ref", pointerRef(tptr))
				}
			}
		}
		if v, ok := r.o.get("$dynamicRef"); ok {
			if s, ok := v.(string); ok {
				if tptr, ok := ix.dynamicTarget(s, r.base); ok {
					r.o.del("$dynamicRef")
					ref := pointerRef(tptr)
					if _, has := r.o.get("$ref"); !has {
						r.o.set("$ref", ref)
					} else {
						r.o.set("allOf", appendRef(r.o, tptr))
					}
				}
			}
		}
	}
}

// appendRef is o's allOf with a reference to root pointer p added.
func appendRef(o *object, p string) []any {
	sub := newObject()
	sub.set("$ref", pointerRef(p))
	all, _ := o.get("allOf")
	list, _ := all.([]any)
	return append(append([]any(nil), list...), sub)
}

func asObject(v any) *object {
	o, _ := v.(*object)
	return o
}

// pointerRef is the "$ref" value naming root pointer p (resolve unescapes it).
func pointerRef(p string) string {
	return "#" + strings.ReplaceAll(p, "%", "%25")
}

// singleSchemaKeywords hold one subschema; listSchemaKeywords an array of them;
// mapSchemaKeywords an object of them.
var (
	singleSchemaKeywords = []string{"additionalProperties", "additionalItems", "items", "contains", "propertyNames",
		"not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
	listSchemaKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	mapSchemaKeywords  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)

// walk records the identifiers of schema v at root pointer ptr, whose
// enclosing base URI is base, and of its subschemas.
func (ix *refIndex) walk(v any, ptr, base string) {
	o, ok := v.(*object)
	if !ok {
		return
	}
	if _, seen := ix.bases[o]; seen {
		return
	}
	_, hasRef := o.get("$ref")
	if !(ix.legacy && hasRef) {
		if id, ok := o.get(ix.idKey); ok {
			if id, ok := id.(string); ok {
				if u, err := parseRef(base, id); err == nil {
					frag := u.Fragment
					u.Fragment, u.RawFragment = "", ""
					if strings.HasPrefix(id, "#") {
						if ix.legacy && frag != "" {
							ix.anchors[base+"#"+frag] = ptr
						}
					} else {
						base = u.String()
						if _, dup := ix.resources[base]; !dup {
							ix.resources[base] = ptr
						}
						if ix.legacy && frag != "" && !strings.HasPrefix(frag, "/") {
							ix.anchors[base+"#"+frag] = ptr
						}
					}
				}
			}
		}
		if !ix.legacy {
			if a, ok := o.get("$anchor"); ok {
				if a, ok := a.(string); ok {
					ix.anchors[base+"#"+a] = ptr
				}
			}
			if a, ok := o.get("$dynamicAnchor"); ok {
				if a, ok := a.(string); ok {
					if _, dup := ix.anchors[base+"#"+a]; !dup {
						ix.anchors[base+"#"+a] = ptr
					}
					ix.dynamic[a] = append(ix.dynamic[a], base)
				}
			}
		}
	}
	if ptr == "" {
		if _, ok := ix.resources[base]; !ok {
			ix.resources[base] = ""
		}
	}
	ix.bases[o] = base
	_, hasDyn := o.get("$dynamicRef")
	if hasRef || hasDyn {
		ix.pending = append(ix.pending, walkedRef{o: o, ptr: ptr, base: base})
	}
	for _, k := range singleSchemaKeywords {
		if s, ok := o.get(k); ok {
			ix.walk(s, ptr+"/"+escPtr(k), base)
		}
	}
	for _, k := range listSchemaKeywords {
		if l, ok := o.get(k); ok {
			if l, ok := l.([]any); ok {
				for i, s := range l {
					ix.walk(s, ptr+"/"+escPtr(k)+"/"+strconv.Itoa(i), base)
				}
			}
		}
	}
	for _, k := range mapSchemaKeywords {
		if m, ok := o.get(k); ok {
			if m, ok := m.(*object); ok {
				for _, name := range m.keys {
					ix.walk(m.val(name), ptr+"/"+escPtr(k)+"/"+escPtr(name), base)
				}
			}
		}
	}
}

// parseRef resolves reference s against base.
func parseRef(base, s string) (*url.URL, error) {
	b, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	r, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if b.Opaque != "" && r.Scheme == "" {
		// a URN base: only a fragment can be relative to it
		if r.Path == "" && r.Host == "" && r.RawQuery == "" && r.Opaque == "" {
			u := *b
			u.Fragment, u.RawFragment = r.Fragment, r.RawFragment
			return &u, nil
		}
		return nil, errNotResolvable
	}
	return b.ResolveReference(r), nil
}

type refError string

func (e refError) Error() string { return string(e) }

const errNotResolvable = refError("not resolvable against a URN")

// target resolves reference s, held by a schema whose base URI is base, to
// the root pointer of its target (ok false: not in this document).
func (ix *refIndex) target(s, base string) (string, bool) {
	u, err := parseRef(base, s)
	if err != nil {
		return "", false
	}
	frag := u.Fragment
	u.Fragment, u.RawFragment = "", ""
	key := u.String()
	rp, ok := ix.resources[key]
	if !ok {
		return "", false
	}
	var tptr string
	switch {
	case frag == "":
		tptr = rp
	case frag[0] == '/':
		tptr = rp + frag
	default:
		p, ok := ix.anchors[key+"#"+frag]
		if !ok {
			return "", false
		}
		tptr = p
	}
	ix.walkTarget(tptr)
	return tptr, true
}

// walkTarget walks a reference's target that the walk from the root did not
// reach (a schema under a keyword the converter does not know, such as
// OpenAPI's components), with the base URI of the nearest walked schema
// around it.
func (ix *refIndex) walkTarget(tptr string) {
	cur, rest := startOf(ix.root, ix.extra, tptr)
	base := ix.rootBase
	if o := asObject(cur); o != nil && ix.bases[o] != "" {
		base = ix.bases[o]
	}
	cur, ok := walkPointer(cur, rest, func(v any) {
		if o, ok := v.(*object); ok {
			if b, ok := ix.bases[o]; ok {
				base = b
			}
		}
	})
	if !ok {
		return
	}
	if o, ok := cur.(*object); ok {
		if _, seen := ix.bases[o]; !seen {
			ix.walk(o, tptr, base)
		}
	}
}

// dynamicTarget resolves a "$dynamicRef" where its target is static (see the
// comment at the top of this file).
func (ix *refIndex) dynamicTarget(s, base string) (string, bool) {
	tptr, ok := ix.target(s, base)
	if !ok {
		return "", false
	}
	u, err := parseRef(base, s)
	if err != nil {
		return "", false
	}
	name := u.Fragment
	if name == "" || name[0] == '/' {
		return tptr, true // no anchor in the fragment: a plain reference
	}
	start, rest := startOf(ix.root, ix.extra, tptr)
	tv, _ := walkPointer(start, rest, nil)
	t := asObject(tv)
	if t == nil {
		return tptr, true
	}
	if a, ok := t.get("$dynamicAnchor"); !ok || a != name {
		return tptr, true
	}
	for _, b := range ix.dynamic[name] {
		if b == ix.rootBase {
			return ix.anchors[ix.rootBase+"#"+name], true
		}
	}
	if owners := ix.dynamic[name]; len(owners) == 1 {
		return ix.anchors[owners[0]+"#"+name], true
	}
	return "", false
}

// walkPointer follows JSON pointer p from cur, calling visit (if any) on
// each value it leaves; ok is false where p names nothing.
func walkPointer(cur any, p string, visit func(any)) (any, bool) {
	if p == "" {
		return cur, true
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if visit != nil {
			visit(cur)
		}
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case *object:
			next, ok := v.get(seg)
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(v) {
				return nil, false
			}
			cur = v[n]
		default:
			return nil, false
		}
	}
	return cur, true
}
