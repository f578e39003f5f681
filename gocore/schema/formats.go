package schema

import "sort"

// String formats: each is the GBNF of the string's content (between the quotes),
// written with ASCII characters that JSON never escapes, so the content is the
// decoded string itself. Every grammar accepts only strings valid under the
// strictest reading of the format's RFC (a subset where the full rule is not
// context-free or is rarely used: no leap seconds, hostnames of at most 4 labels,
// e-mail addresses in dot-atom form, URIs without IP-literal hosts). minLen and
// maxLen bound the content's length (maxLen < 0: unbounded), so that length
// keywords that the format already implies can be dropped.
type format struct {
	rules          map[string]string // helper rules, by name
	root           string            // the rule for the content
	minLen, maxLen int
}

var formats = map[string]format{
	"date": {rules: map[string]string{
		"f-date":     `f-year "-" (("0" [13578] | "1" [02]) "-" f-day31 | ("0" [469] | "11") "-" f-day30 | "02-" f-day28) | f-leapyear "-02-29"`,
		"f-year":     `[1-9] [0-9]{3} | "0" [1-9] [0-9]{2} | "00" [1-9] [0-9] | "000" [1-9]`,
		"f-leapyear": `[0-9] [0-9] f-leap2 | f-leap2 "00"`,
		"f-leap2":    `"0" [48] | [2468] [048] | [13579] [26]`,
		"f-day31":    `"0" [1-9] | [12] [0-9] | "3" [01]`,
		"f-day30":    `"0" [1-9] | [12] [0-9] | "30"`,
		"f-day28":    `"0" [1-9] | "1" [0-9] | "2" [0-8]`,
	}, root: "f-date", minLen: 10, maxLen: 10},
	"time": {rules: map[string]string{
		"f-time":   `f-hms ("." [0-9]+)? ([Zz] | [-+] f-hour ":" f-minute)`,
		"f-hms":    `f-hour ":" f-minute ":" f-minute`,
		"f-hour":   `[01] [0-9] | "2" [0-3]`,
		"f-minute": `[0-5] [0-9]`,
	}, root: "f-time", minLen: 9, maxLen: -1},
	"date-time": {rules: map[string]string{
		"f-date-time": `f-date [Tt] f-time`,
	}, root: "f-date-time", minLen: 20, maxLen: -1},
	"duration": {rules: map[string]string{
		"f-duration": `"P" (f-dur-date f-dur-time? | f-dur-time | [0-9]+ "W")`,
		"f-dur-date": `[0-9]+ "Y" ([0-9]+ "M" ([0-9]+ "D")?)? | [0-9]+ "M" ([0-9]+ "D")? | [0-9]+ "D"`,
		"f-dur-time": `"T" ([0-9]+ "H" ([0-9]+ "M" ([0-9]+ "S")?)? | [0-9]+ "M" ([0-9]+ "S")? | [0-9]+ "S")`,
	}, root: "f-duration", minLen: 3, maxLen: -1},
	"email": {rules: map[string]string{
		"f-email":    `f-atom ("." f-atom)* "@" f-hostname`,
		"f-atom":     "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~\\-]+",
		"f-label":    `[a-zA-Z0-9] ([a-zA-Z0-9\-]{0,60} [a-zA-Z0-9])?`,
		"f-hostname": `f-label ("." f-label){0,3}`,
	}, root: "f-email", minLen: 3, maxLen: -1},
	"hostname": {rules: map[string]string{
		"f-label":    `[a-zA-Z0-9] ([a-zA-Z0-9\-]{0,60} [a-zA-Z0-9])?`,
		"f-hostname": `f-label ("." f-label){0,3}`,
	}, root: "f-hostname", minLen: 1, maxLen: 251},
	"ipv4": {rules: map[string]string{
		"f-ipv4":  `f-octet "." f-octet "." f-octet "." f-octet`,
		"f-octet": `"25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9]`,
	}, root: "f-ipv4", minLen: 7, maxLen: 15},
	"ipv6": {rules: map[string]string{
		"f-ipv6":  `(f-h16 ":"){6} f-ls32 | "::" (f-h16 ":"){5} f-ls32 | f-h16? "::" (f-h16 ":"){4} f-ls32 | (f-h16 (":" f-h16)?)? "::" (f-h16 ":"){3} f-ls32 | (f-h16 (":" f-h16){0,2})? "::" (f-h16 ":"){2} f-ls32 | (f-h16 (":" f-h16){0,3})? "::" f-h16 ":" f-ls32 | (f-h16 (":" f-h16){0,4})? "::" f-ls32 | (f-h16 (":" f-h16){0,5})? "::" f-h16 | (f-h16 (":" f-h16){0,6})? "::"`,
		"f-h16":   `[0-9a-fA-F]{1,4}`,
		"f-ls32":  `f-h16 ":" f-h16 | f-ipv4`,
		"f-ipv4":  `f-octet "." f-octet "." f-octet "." f-octet`,
		"f-octet": `"25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9]`,
	}, root: "f-ipv6", minLen: 2, maxLen: 45},
	"uuid": {rules: map[string]string{
		"f-uuid": `[0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12}`,
	}, root: "f-uuid", minLen: 36, maxLen: 36},
	"uri": {rules: map[string]string{
		"f-uri":          `[a-zA-Z] [a-zA-Z0-9+.\-]* ":" ("//" f-authority f-path-abempty | "/" (f-pchar+ f-path-abempty)? | f-pchar+ f-path-abempty)? ("?" f-query)? ("#" f-query)?`,
		"f-authority":    `(f-userinfo "@")? f-regname (":" [0-9]*)?`,
		"f-userinfo":     `(f-unreserved | f-pct | f-subdelim | ":")*`,
		"f-regname":      `(f-unreserved | f-pct | f-subdelim)*`,
		"f-path-abempty": `("/" f-pchar*)*`,
		"f-query":        `(f-pchar | [/?])*`,
		"f-pchar":        `f-unreserved | f-pct | f-subdelim | [:@]`,
		"f-unreserved":   `[a-zA-Z0-9._~\-]`,
		"f-pct":          `"%" [0-9a-fA-F] [0-9a-fA-F]`,
		"f-subdelim":     `[!$&'()*+,;=]`,
	}, root: "f-uri", minLen: 2, maxLen: -1},
}

func init() {
	// date-time reuses date and time.
	dt := formats["date-time"]
	for _, f := range []string{"date", "time"} {
		for k, v := range formats[f].rules {
			dt.rules[k] = v
		}
	}
}

// formatRef defines the rules of a known format and returns its root rule name.
func formatRef(b *builder, f format) string {
	keys := make([]string, 0, len(f.rules))
	for k := range f.rules {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.fixed(k, f.rules[k])
	}
	return f.root
}
