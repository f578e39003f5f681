package schema_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/schema"
)

// TestReferencesResolvedAgainstTheirBase: a "$ref" is resolved against the
// base URI of the schema resource that holds it ("$id"), and may name an
// "$anchor", an embedded resource by its URI or a static "$dynamicRef" target.
func TestReferencesResolvedAgainstTheirBase(t *testing.T) {
	cases := []struct {
		name           string
		schema         string
		draft          schema.Draft
		accept, reject []string
	}{
		{
			name: "#/$defs inside an embedded resource names that resource's $defs (issue 26's probe)",
			schema: `{"$id":"http://ex/root.json","$defs":{"a":{"type":"integer"}},"type":"object","properties":{"x":` +
				`{"$id":"http://ex/sub.json","$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a"}}}`,
			accept: []string{`{"x":"a"}`, `{}`},
			reject: []string{`{"x":1}`},
		},
		{
			name: "the same, 2020-12 declared",
			schema: `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"http://ex/root.json","$defs":{"a":{"type":"integer"}},` +
				`"type":"object","properties":{"x":{"$id":"http://ex/sub.json","$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a"}}}`,
			accept: []string{`{"x":"a"}`},
			reject: []string{`{"x":1}`},
		},
		{
			name: "draft-07: a $ref below the embedded resource resolves in it",
			schema: `{"$schema":"http://json-schema.org/draft-07/schema#","$id":"http://ex/root.json","definitions":{"a":{"type":"integer"}},` +
				`"type":"object","properties":{"x":{"$id":"http://ex/sub.json","definitions":{"a":{"type":"string"}},"allOf":[{"$ref":"#/definitions/a"}]}}}`,
			accept: []string{`{"x":"a"}`},
			reject: []string{`{"x":1}`},
		},
		{
			name: "draft-07: an $id beside a $ref is ignored, so the $ref resolves in the root",
			schema: `{"$id":"http://ex/root.json","definitions":{"a":{"type":"integer"}},` +
				`"type":"object","properties":{"x":{"$id":"http://ex/sub.json","definitions":{"a":{"type":"string"}},"$ref":"#/definitions/a"}}}`,
			draft:  schema.Draft7,
			accept: []string{`{"x":1}`},
			reject: []string{`{"x":"a"}`},
		},
		{
			name:   "$anchor",
			schema: `{"$ref":"#foo","$defs":{"A":{"$anchor":"foo","type":"integer"}}}`,
			accept: []string{`12`},
			reject: []string{`"12"`, `1.5`},
		},
		{
			name: "an embedded resource by its relative URI, and an anchor in it by absolute URI",
			schema: `{"$id":"http://ex/root.json","type":"array","prefixItems":[{"$ref":"b.json"},{"$ref":"http://ex/b.json#flag"}],"items":false,` +
				`"$defs":{"B":{"$id":"b.json","type":"boolean","$defs":{"f":{"$anchor":"flag","const":"on"}}}}}`,
			accept: []string{`[true,"on"]`, `[false]`, `[]`},
			reject: []string{`["on",true]`, `[true,"off"]`, `[true,"on",1]`},
		},
		{
			name: "a URN base with a JSON pointer reference",
			schema: `{"$id":"urn:uuid:deadbeef-1234-0000-0000-4321feebdaed","type":"object","properties":{"foo":` +
				`{"$ref":"urn:uuid:deadbeef-1234-0000-0000-4321feebdaed#/$defs/bar"}},"$defs":{"bar":{"type":"string"}}}`,
			accept: []string{`{"foo":"bar"}`},
			reject: []string{`{"foo":12}`},
		},
		{
			name:   "draft-07 location-independent identifier ($id \"#foo\")",
			schema: `{"allOf":[{"$ref":"#foo"}],"definitions":{"A":{"$id":"#foo","type":"integer"}}}`,
			draft:  schema.Draft7,
			accept: []string{`1`},
			reject: []string{`"a"`},
		},
		{
			name: "an embedded resource reached only by reference, under an unknown keyword (OpenAPI components)",
			schema: `{"$ref":"#/components/schemas/X","$defs":{"a":{"type":"integer"}},"components":{"schemas":{"X":` +
				`{"$id":"http://ex/x.json","$defs":{"a":{"type":"string"}},"type":"object","properties":{"v":{"$ref":"#/$defs/a"}}}}}}`,
			accept: []string{`{"v":"s"}`},
			reject: []string{`{"v":1}`},
		},
		{
			// No identifier anywhere: only the reference itself, which is not a
			// fragment, makes resolution worth running (see needsIdentifiers).
			name:   `"$ref": "" names the document itself`,
			schema: `{"type":"object","properties":{"a":{"$ref":""}},"additionalProperties":false}`,
			accept: []string{`{}`, `{"a":{}}`, `{"a":{"a":{}}}`},
			reject: []string{`{"a":1}`, `{"b":{}}`},
		},
		{
			name:   "draft-04 id: a reference relative to it",
			schema: `{"id":"http://ex/root.json","properties":{"a":{"$ref":"root.json#/definitions/b"}},"definitions":{"b":{"type":"integer"}}}`,
			draft:  schema.Draft4,
			accept: []string{`{"a":1}`},
			reject: []string{`{"a":"x"}`},
		},
		{
			name:   `draft-04 location-independent identifier ("id": "#foo")`,
			schema: `{"allOf":[{"$ref":"#foo"}],"definitions":{"A":{"id":"#foo","type":"integer"}}}`,
			draft:  schema.Draft4,
			accept: []string{`1`},
			reject: []string{`"a"`},
		},
		{
			name:   `"$id" only as a string value and an escaped "#": nothing to resolve, fragments still resolve`,
			schema: `{"type":"object","properties":{"a":{"$ref":"\u0023/$defs/b"},"c":{"const":"$id"}},"$defs":{"b":{"type":"integer"}}}`,
			accept: []string{`{"a":1}`, `{"c":"$id"}`},
			reject: []string{`{"a":"x"}`, `{"c":"id"}`},
		},
		{
			name: "a $dynamicRef whose anchor the root resource declares is static",
			schema: `{"$id":"http://ex/root","$ref":"list","$defs":{"foo":{"$dynamicAnchor":"items","type":"string"},` +
				`"list":{"$id":"list","type":"array","items":{"$dynamicRef":"#items"},"$defs":{"items":{"$dynamicAnchor":"items"}}}}}`,
			accept: []string{`["a","b"]`, `[]`},
			reject: []string{`["a",1]`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, _, err := schema.FromJSONSchema([]byte(tc.schema), schema.WithDraft(tc.draft))
			require.NoError(t, err)
			c := newChecker(t, g)
			for _, s := range tc.accept {
				assert.True(t, c.accepts(s), "should accept %s", s)
			}
			for _, s := range tc.reject {
				assert.False(t, c.accepts(s), "should reject %s", s)
			}
		})
	}
}

// TestUnresolvableReferences: a reference to another document, to a missing
// anchor, or a $dynamicRef whose target depends on the path to it is refused
// with the keyword and the pointer of the schema holding it.
func TestUnresolvableReferences(t *testing.T) {
	cases := []struct{ schema, keyword, pointer, msg string }{
		{`{"properties":{"a":{"$ref":"http://other.example/s.json"}}}`, "$ref", "/properties/a", "other documents are not fetched"},
		{`{"$id":"http://ex/r.json","items":{"$ref":"#nope"}}`, "$ref", "/items", "names no $anchor"},
		{`{"$id":"http://ex/root","anyOf":[{"$ref":"a"},{"$ref":"b"}],"$defs":{` +
			`"a":{"$id":"a","$dynamicAnchor":"t","type":"object","properties":{"n":{"$dynamicRef":"#t"}}},` +
			`"b":{"$id":"b","$dynamicAnchor":"t","type":"integer"}}}`, "$dynamicRef", "/$defs/a/properties/n", "dynamic"},
	}
	for _, tc := range cases {
		_, _, err := schema.FromJSONSchema([]byte(tc.schema))
		var se *schema.SchemaError
		require.True(t, errors.As(err, &se), "%s: %v", tc.schema, err)
		assert.Equal(t, tc.keyword, se.Keyword, tc.schema)
		assert.Equal(t, tc.pointer, se.Pointer, tc.schema)
		assert.Contains(t, se.Msg, tc.msg, tc.schema)
	}
}

// TestResources: references to other documents resolve in the documents
// WithResources gives (by URI or by their own $id), and errors inside them
// name the document.
func TestResources(t *testing.T) {
	res := map[string][]byte{
		"https://example.com/address.json": []byte(`{"type":"object","properties":{"zip":{"$ref":"#/$defs/zip"}},"required":["zip"],` +
			`"$defs":{"zip":{"type":"string","pattern":"^[0-9]{5}$"}}}`),
		"https://example.com/other.json": []byte(`{"$id":"https://example.com/named.json","$defs":{"n":{"type":"integer"},"bad":{"not":{"multipleOf":3}}}}`),
	}
	g, _, err := schema.FromJSONSchema([]byte(`{"type":"object","properties":{"home":{"$ref":"https://example.com/address.json"},`+
		`"n":{"$ref":"named.json#/$defs/n"}},"$id":"https://example.com/root.json"}`), schema.WithResources(res))
	require.NoError(t, err)
	c := newChecker(t, g)
	assert.True(t, c.accepts(`{"home":{"zip":"12345"},"n":3}`))
	assert.False(t, c.accepts(`{"home":{"zip":"1234"}}`))
	assert.False(t, c.accepts(`{"n":"3"}`))

	_, _, err = schema.FromJSONSchema([]byte(`{"$ref":"https://example.com/other.json#/$defs/bad"}`), schema.WithResources(res))
	var se *schema.SchemaError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, "/$defs/bad", se.Pointer)
	assert.Contains(t, se.Msg, "in the resource https://example.com/other.json")

	_, _, err = schema.FromJSONSchema([]byte(`{"$ref":"https://example.com/address.json"}`), schema.WithResources(map[string][]byte{"address.json": []byte(`{}`)}))
	assert.ErrorContains(t, err, "absolute URI")
	_, _, err = schema.FromJSONSchema([]byte(`{"$ref":"https://example.com/a.json"}`), schema.WithResources(map[string][]byte{"https://example.com/a.json": []byte(`{`)}))
	assert.ErrorContains(t, err, "not valid JSON")
}
