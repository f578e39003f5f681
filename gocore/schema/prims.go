package schema

import (
	"fmt"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// primBodies are the shared rules, written with ws standing for the whitespace
// rule (removed in Compact mode). Their names are reserved in every grammar.
var primBodies = map[string]string{
	"ws":    "",
	"hex":   `[0-9a-fA-F]`,
	"esc":   `"\\" ["\\bfnrt] | "\\u00" [01] hex`,
	"kesc":  `"\\" ["\\bfnrt] | "\\u00" ("0" [0-7bBeEfF] | "1" hex)`,
	"kchar": `[^"\\\x00-\x1F] | kesc`,
	"krest": `kchar* "\""`,
	// char is one code point of a JSON string in any spelling JSON allows, except
	// lone surrogate escapes (a pair of escapes is one code point).
	"char":    `[^"\\\x00-\x1F] | "\\" ["\\/bfnrt] | "\\u" ([0-9a-cA-Ce-fE-F] hex hex hex | [dD] [0-7] hex hex) | "\\u" [dD] [89abAB] hex hex "\\u" [dD] [c-fC-F] hex hex`,
	"string":  `"\"" char* "\""`,
	"integer": `"-"? ("0" | [1-9] [0-9]*)`,
	"number":  `"-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?`,
	"boolean": `"true" | "false"`,
	"null":    `"null"`,
	"value":   `object | array | string | number | boolean | null`,
	"object":  `"{" ws (string ws ":" ws value ws ("," ws string ws ":" ws value ws)*)? "}"`,
	"array":   `"[" ws (value ws ("," ws value ws)*)? "]"`,
	"fracnz":  `[0-9]* [1-9] [0-9]*`,
}

// primDeps lists the primitives each one refers to.
var primDeps = map[string][]string{
	"esc":    {"hex"},
	"kesc":   {"hex"},
	"kchar":  {"kesc"},
	"krest":  {"kchar"},
	"char":   {"hex"},
	"string": {"char"},
	"value":  {"object", "array", "string", "number", "boolean", "null"},
	"object": {"ws", "string", "value"},
	"array":  {"ws", "value"},
}

// primRef defines the primitive name (and what it needs) and returns how to refer
// to it; the whitespace rule is "" in Compact mode.
func primRef(b *builder, name string) string {
	if name == "ws" && b.cfg.ws == Compact {
		return ""
	}
	if _, ok := b.rules[name]; ok {
		return name
	}
	body := primBodies[name]
	switch name {
	case "ws":
		if b.cfg.ws == Bounded {
			body = `(" " | "\n" "\n"? [ \t]{0,20})?`
		} else {
			body = `[ \t\n\r]*`
		}
	case "integer":
		if d := b.cfg.maxIntDigits; d > 0 {
			body = fmt.Sprintf(`"-"? ("0" | [1-9] [0-9]{0,%d})`, d-1)
		}
		if b.cfg.exactTypes {
			body += ` ("." "0"+)?` // ExactTypes: 1.0 is an integer
		}
	case "object", "array":
		if b.cfg.ws == Compact {
			body = removeWS(body)
		}
	}
	b.fixed(name, body)
	for _, d := range primDeps[name] {
		primRef(b, d)
	}
	return name
}

// removeWS drops the references to ws from a primitive's body.
func removeWS(s string) string {
	out := []byte{}
	for i := 0; i < len(s); i++ {
		if s[i] == 'w' && i+1 < len(s) && s[i+1] == 's' && (i == 0 || s[i-1] == ' ') && (i+2 == len(s) || s[i+2] == ' ' || s[i+2] == ')') {
			i++
			if i+1 < len(s) && s[i+1] == ' ' {
				i++
			}
			continue
		}
		out = append(out, s[i])
	}
	return string(out)
}

// checkGrammar parses the generated text, so that a grammar this package
// returns is always one gbnf.Parse accepts.
func checkGrammar(g string) error {
	_, err := gbnf.Parse(g)
	return err
}
