package schema

// Keywords by what they constrain. Keywords in none of these sets are
// annotations or unknown vocabulary and are ignored silently.

var objectKeywords = map[string]bool{
	"properties": true, "additionalProperties": true, "required": true, "patternProperties": true,
	"minProperties": true, "maxProperties": true, "propertyNames": true, "dependentRequired": true,
	"dependentSchemas": true, "dependencies": true, "unevaluatedProperties": true,
}

var arrayKeywords = map[string]bool{
	"items": true, "prefixItems": true, "additionalItems": true, "minItems": true, "maxItems": true,
	"uniqueItems": true, "contains": true, "minContains": true, "maxContains": true, "unevaluatedItems": true,
}

var stringKeywords = map[string]bool{
	"minLength": true, "maxLength": true, "pattern": true,
}

var numberKeywords = map[string]bool{
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
}

// stringFormats are formats that say a value is a string (for type inference).
func isStringFormat(f string) bool {
	_, ok := formats[f]
	return ok
}

// assertedFormat reports the formats that JSON Schema defines (draft 3 to
// 2020-12) and that validators check: a format the converter cannot write is
// refused only if it is one of these. Any other format is unknown vocabulary,
// which validators ignore, and so does the converter.
func assertedFormat(f string) bool {
	switch f {
	case "date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname",
		"ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference", "uuid", "uri-template",
		"json-pointer", "relative-json-pointer", "regex", "host-name", "ip-address", "color", "utc-millisec":
		return true
	}
	return false
}

// numericFormats are OpenAPI formats of numbers: ranges for integers, nothing
// for floats.
var numericFormats = map[string][2]string{
	"int32":  {"-2147483648", "2147483647"},
	"int64":  {"-9223372036854775808", "9223372036854775807"},
	"uint32": {"0", "4294967295"},
	"uint64": {"0", "18446744073709551615"},
	"int8":   {"-128", "127"},
	"int16":  {"-32768", "32767"},
	"uint8":  {"0", "255"},
	"uint16": {"0", "65535"},
	"float":  {"", ""},
	"double": {"", ""},
}

// generalUnsupported are keywords that constrain any type and that a grammar
// cannot enforce (each is checked further in checkUnsupported).
var generalUnsupported = []string{"not", "if", "$dynamicRef", "$recursiveRef"}

// allTypes is every JSON type, in the order alternatives are written.
var allTypes = []string{"object", "array", "string", "number", "integer", "boolean", "null"}

func validType(t string) bool {
	for _, x := range allTypes {
		if x == t {
			return true
		}
	}
	return false
}

// familyOf says which type a type-specific keyword applies to.
func familyOf(k string) string {
	switch {
	case objectKeywords[k]:
		return "object"
	case arrayKeywords[k]:
		return "array"
	case stringKeywords[k]:
		return "string"
	case numberKeywords[k]:
		return "number"
	}
	return ""
}
