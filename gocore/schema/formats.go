package schema

import (
	"fmt"
	"sort"
	"strings"
)

// String formats: each is the GBNF of the string's content (between the
// quotes), written as JSON text. Almost every character is one that JSON never
// escapes, so the content is the decoded string itself; the exceptions are the
// quotes of an e-mail's quoted local part and the '"' and '\' of a regex or a
// JSON pointer, written as the escapes \" and \\ (and a JSON pointer's control
// characters as \n, \u001f, ...). minLen and maxLen bound the decoded string's
// length in code points (maxLen < 0: unbounded), so that length keywords that
// the format already implies can be dropped.
//
// Every grammar accepts only strings valid under the strictest reading of the
// format's RFC. Where the full rule is not context-free, too large or rarely
// used, the grammar is a documented subset:
//
//   - time, date-time: a leap second (hh:mm:60) only where its offset makes it
//     23:59:60 UTC and the offset's minutes are 00, 30 or 45 (or Z): exact
//     for every offset in use today, 2.5 KB of rules.
//   - hostname: every label refuses "--" in its 3rd and 4th characters, which
//     rules out every A-label ("xn--...": checking Punycode is not a small
//     grammar) and the reserved R-LDH labels; exact for the other LDH labels.
//     Labels are 1..63 characters; the name's length is bounded by a budget
//     of 15 units where a label of up to 15 characters costs 1, up to 31
//     costs 2 and up to 63 costs 4 (each unit is 16 characters with its dot),
//     so an accepted name has at most 239 characters (RFC 1123: 253) and at
//     most 15 labels, and every name of up to 15 labels of up to 15
//     characters is accepted. Labels may be all digits (RFC 1123 2.1 allows
//     it; only the top-level label of a real name never is).
//   - idn-hostname: the hostname grammar, plus U-labels of 1..9 characters
//     from lowercase a-z, 0-9, '-' (same hyphen rules) and letters that are
//     PVALID in IDNA 2008, left-to-right, NFC and free of contextual rules
//     (Latin-1 lowercase, Greek and Cyrillic lowercase, Hiragana, Katakana,
//     CJK U+4E00..U+9FA5, Hangul syllables). Such a label's A-label has at
//     most 58 characters; a U-label costs 4 units of the budget.
//   - email, idn-email: the local part a dot-atom of at most 64 characters
//     (a lone atom of up to 64, or atoms within a budget of 4 units as for
//     host names: up to 4 atoms of up to 15 characters), or a quoted string
//     of 1..62 characters without quoted pairs; idn-email also a dot-atom or
//     quoted string of up to 15 code points with any non-ASCII character (at
//     most 60 octets). The domain is a host name of at most 11 units (175
//     characters, so the address stays within RFC 5321's 254), idn-email's
//     with U-labels, or an IPv4 or IPv6 address literal. RFC 5321's
//     general address literals are left out.
//   - iri, iri-reference: no right-to-left characters (Hebrew, Arabic and the
//     other right-to-left blocks) and no bidirectional formatting characters
//     (RFC 3987 4.1 forbids the latter; 4.2's rules for the former are not
//     checked, so they are left out).
//   - uri-template: the operators of levels 1-4 only (RFC 6570 reserves
//     "=,!@|"), literals as the RFC's ABNF ("'" excluded).
//   - relative-json-pointer: without index manipulation ("0+1/a").
//   - regex: a subset of ECMA-262 valid with and without the u flag:
//     alternatives, groups (capturing and "(?:"), the quantifiers * + ? {n}
//     {n,} {n,m} (m a digit not below n), lazy forms, ^ $ \b \B, character
//     classes whose ranges are a-x, x-z, A-X, X-Z, 0-x and x-9, and the escapes
//     \d \D \s \S \w \W \f \n \r \t \v \cX \xHH \uHHHH and of syntax
//     characters. No lookaround, backreferences, named groups or \p.
type format struct {
	rules          map[string]string // helper rules, by name
	root           string            // the rule for the content
	minLen, maxLen int
}

// formatRules are the rules of every format, by name; a format's rules are
// those its root reaches.
var formatRules = map[string]string{
	// date and time (RFC 3339)
	"f-date":      `f-year "-" (("0" [13578] | "1" [02]) "-" f-day31 | ("0" [469] | "11") "-" f-day30 | "02-" f-day28) | f-leapyear "-02-29"`,
	"f-year":      `[1-9] [0-9]{3} | "0" [1-9] [0-9]{2} | "00" [1-9] [0-9] | "000" [1-9]`,
	"f-leapyear":  `[0-9] [0-9] f-leap2 | f-leap2 "00"`,
	"f-leap2":     `"0" [48] | [2468] [048] | [13579] [26]`,
	"f-day31":     `"0" [1-9] | [12] [0-9] | "3" [01]`,
	"f-day30":     `"0" [1-9] | [12] [0-9] | "30"`,
	"f-day28":     `"0" [1-9] | "1" [0-9] | "2" [0-8]`,
	"f-time":      `f-hms ("." [0-9]+)? ([Zz] | [-+] f-hour ":" f-minute) | f-leap`,
	"f-hms":       `f-hour ":" f-minute ":" f-minute`,
	"f-hour":      `[01] [0-9] | "2" [0-3]`,
	"f-minute":    `[0-5] [0-9]`,
	"f-leap59":    `"59:60" ("." [0-9]+)?`,
	"f-leap29":    `"29:60" ("." [0-9]+)?`,
	"f-leap44":    `"44:60" ("." [0-9]+)?`,
	"f-leap14":    `"14:60" ("." [0-9]+)?`,
	"f-date-time": `f-date [Tt] f-time`,
	"f-duration":  `"P" (f-dur-date f-dur-time? | f-dur-time | [0-9]+ "W")`,
	"f-dur-date":  `[0-9]+ "Y" ([0-9]+ "M" ([0-9]+ "D")?)? | [0-9]+ "M" ([0-9]+ "D")? | [0-9]+ "D"`,
	"f-dur-time":  `"T" ([0-9]+ "H" ([0-9]+ "M" ([0-9]+ "S")?)? | [0-9]+ "M" ([0-9]+ "S")? | [0-9]+ "S")`,

	// host names (RFC 1123, RFC 5890/5891): a label is 1..63 characters
	// without '-' first, last, or in both the 3rd and 4th place. f-lab1 has
	// 1..15 characters, f-lab2 16..31, f-lab4 32..63.
	"f-alnum":    `[a-zA-Z0-9]`,
	"f-ldh":      `[a-zA-Z0-9\-]`,
	"f-lab-head": `f-alnum f-ldh (f-alnum f-ldh | "-" f-alnum)`,
	"f-lab1":     `f-alnum (f-ldh{0,2} f-alnum)? | f-lab-head f-ldh{0,10} f-alnum`,
	"f-lab2":     `f-lab-head f-ldh{11,26} f-alnum`,
	"f-lab4":     `f-lab-head f-ldh{27,58} f-alnum`,
	// U-labels of 1..9 characters (see above)
	"f-ualnum":    `[a-z0-9` + uLetters + `]`,
	"f-uldh":      `[a-z0-9\-` + uLetters + `]`,
	"f-ulab-head": `f-ualnum f-uldh (f-ualnum f-uldh | "-" f-ualnum)`,
	"f-ulab":      `f-ualnum (f-uldh{0,2} f-ualnum)? | f-ulab-head f-uldh{0,4} f-ualnum`,

	"f-ipv4":  `f-octet "." f-octet "." f-octet "." f-octet`,
	"f-octet": `"25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9]`,
	"f-ipv6":  `(f-h16 ":"){6} f-ls32 | "::" (f-h16 ":"){5} f-ls32 | f-h16? "::" (f-h16 ":"){4} f-ls32 | (f-h16 (":" f-h16)?)? "::" (f-h16 ":"){3} f-ls32 | (f-h16 (":" f-h16){0,2})? "::" (f-h16 ":"){2} f-ls32 | (f-h16 (":" f-h16){0,3})? "::" f-h16 ":" f-ls32 | (f-h16 (":" f-h16){0,4})? "::" f-ls32 | (f-h16 (":" f-h16){0,5})? "::" f-h16 | (f-h16 (":" f-h16){0,6})? "::"`,
	"f-h16":   `[0-9a-fA-F]{1,4}`,
	"f-ls32":  `f-h16 ":" f-h16 | f-ipv4`,
	"f-uuid":  `[0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12}`,

	// e-mail (RFC 5321, RFC 6531). f-atom1 has 1..15 characters, f-atom2
	// 16..31, f-atom4 32..64; f-local-n is a dot-atom of at most 16n-1.
	"f-atext":        "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~\\-]",
	"f-atom1":        `f-atext{1,15}`,
	"f-atom2":        `f-atext{16,31}`,
	"f-atom4":        `f-atext{32,64}`,
	"f-local-1":      `f-atom1`,
	"f-local-2":      `f-atom1 ("." f-local-1)? | f-atom2`,
	"f-local-3":      `f-atom1 ("." f-local-2)? | f-atom2 ("." f-local-1)?`,
	"f-local-4":      `f-atom1 ("." f-local-3)? | f-atom2 ("." f-local-2)? | f-atom4`,
	"f-qtext":        `[ !#-\[\]-~]`,
	"f-quoted":       `"\\\"" f-qtext{1,62} "\\\""`,
	"f-addr-literal": `"[" f-ipv4 "]" | "[IPv6:" f-ipv6 "]"`,
	"f-email":        `(f-local-4 | f-quoted) "@" (f-host-11 | f-addr-literal)`,
	"f-uatext":       "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~\\-\\u0080-\\uD7FF\\uE000-\\U0010FFFF]",
	"f-ulocal":       `f-uatext (f-uatext | "." f-uatext){0,7}`,
	"f-uqtext":       `[ !#-\[\]-~\u0080-\uD7FF\uE000-\U0010FFFF]`,
	"f-uquoted":      `"\\\"" f-uqtext{1,15} "\\\""`,
	"f-idn-email":    `(f-local-4 | f-quoted | f-ulocal | f-uquoted) "@" (f-idnhost-11 | f-addr-literal)`,

	// URIs (RFC 3986)
	"f-uri":          `f-scheme ":" f-hier? ("?" f-query)? ("#" f-query)?`,
	"f-uri-ref":      `f-uri | f-relref`,
	"f-relref":       `f-relpart? ("?" f-query)? ("#" f-query)?`,
	"f-scheme":       `[a-zA-Z] [a-zA-Z0-9+.\-]*`,
	"f-hier":         `"//" f-authority f-path-abempty | "/" (f-segnz f-path-abempty)? | f-segnz f-path-abempty`,
	"f-relpart":      `"//" f-authority f-path-abempty | "/" (f-segnz f-path-abempty)? | f-segnc f-path-abempty`,
	"f-authority":    `(f-userinfo "@")? f-urihost (":" [0-9]*)?`,
	"f-urihost":      `f-regname | "[" f-ipliteral "]"`,
	"f-ipliteral":    `f-ipv6 | [vV] [0-9a-fA-F]+ "." (f-unreserved | f-subdelim | ":")+`,
	"f-userinfo":     `(f-unreserved | f-pct | f-subdelim | ":")*`,
	"f-regname":      `(f-unreserved | f-pct | f-subdelim)*`,
	"f-path-abempty": `("/" f-pchar*)*`,
	"f-segnz":        `f-pchar+`,
	"f-segnc":        `(f-unreserved | f-pct | f-subdelim | "@")+`,
	"f-query":        `(f-pchar | [/?])*`,
	"f-pchar":        `f-unreserved | f-pct | f-subdelim | [:@]`,
	"f-unreserved":   `[a-zA-Z0-9._~\-]`,
	"f-pct":          `"%" [0-9a-fA-F] [0-9a-fA-F]`,
	"f-subdelim":     `[!$&'()*+,;=]`,

	// IRIs (RFC 3987)
	"f-iri":           `f-scheme ":" f-ihier? ("?" f-iquery)? ("#" f-ifragment)?`,
	"f-iri-ref":       `f-iri | f-irelref`,
	"f-irelref":       `f-irelpart? ("?" f-iquery)? ("#" f-ifragment)?`,
	"f-ihier":         `"//" f-iauthority f-ipath-abempty | "/" (f-isegnz f-ipath-abempty)? | f-isegnz f-ipath-abempty`,
	"f-irelpart":      `"//" f-iauthority f-ipath-abempty | "/" (f-isegnz f-ipath-abempty)? | f-isegnc f-ipath-abempty`,
	"f-iauthority":    `(f-iuserinfo "@")? f-iurihost (":" [0-9]*)?`,
	"f-iurihost":      `f-iregname | "[" f-ipliteral "]"`,
	"f-iuserinfo":     `(f-iunreserved | f-pct | f-subdelim | ":")*`,
	"f-iregname":      `(f-iunreserved | f-pct | f-subdelim)*`,
	"f-ipath-abempty": `("/" f-ipchar*)*`,
	"f-isegnz":        `f-ipchar+`,
	"f-isegnc":        `(f-iunreserved | f-pct | f-subdelim | "@")+`,
	"f-iquery":        `(f-ipchar | f-iprivate | [/?])*`,
	"f-ifragment":     `(f-ipchar | [/?])*`,
	"f-ipchar":        `f-iunreserved | f-pct | f-subdelim | [:@]`,
	"f-iunreserved":   `[a-zA-Z0-9._~\-] | f-ucschar`,
	"f-ucschar":       `[` + ucsChars + `]`,
	"f-iprivate":      `[\uE000-\uF8FF\U000F0000-\U000FFFFD\U00100000-\U0010FFFD]`,
	"f-uri-template":  `(f-ut-literal | "{" [+#./;?&]? f-ut-varspec ("," f-ut-varspec)* "}")*`,
	"f-ut-literal":    `[!#$&(-;=?-\[\]_a-z~] | f-ucschar | f-iprivate | f-pct`,
	"f-ut-varspec":    `f-ut-varchar ("."? f-ut-varchar)* (":" [1-9] [0-9]{0,3} | "*")?`,
	"f-ut-varchar":    `[a-zA-Z0-9_] | f-pct`,
	"f-json-pointer":  `("/" f-jp-char*)*`,
	"f-jp-char":       `[^"\\\x00-\x1F/~] | "~" [01] | "\\" ["\\bfnrt] | "\\u00" [01] [0-9a-fA-F]`,
	"f-rel-json-ptr":  `("0" | [1-9] [0-9]*) ("#" | f-json-pointer)`,
	"f-regex":         `f-re-alt ("|" f-re-alt)*`,
	"f-re-alt":        `f-re-term*`,
	"f-re-term":       `[$^] | "\\\\" [bB] | f-re-atom f-re-quant?`,
	"f-re-atom":       `[^"\\\x00-\x1F$^.*+?()\[\]{}|] | "\\\"" | "." | "\\\\" f-re-esc | "[" "^"? f-re-cc* "]" | "(" "?:"? f-regex ")"`,
	"f-re-esc":        `[dDsSwWfnrtv] | f-re-code | [$^.*+?()\[\]{}|/] | "\\\\"`,
	"f-re-code":       `"c" [a-zA-Z] | "x" [0-9a-fA-F]{2} | "u" [0-9a-fA-F]{4}`,
	"f-re-cc":         `[^"\\\x00-\x1F\[\]\-] | "\\\"" | f-re-range | "\\\\" f-re-cesc`,
	"f-re-cesc":       `[dDsSwWbfnrtv] | f-re-code | [$^.*+?()\[\]{}|/\-] | "\\\\"`,
	"f-re-range":      `"a-" [a-z] | [a-z] "-z" | "A-" [A-Z] | [A-Z] "-Z" | "0-" [0-9] | [0-9] "-9"`,
	"f-re-quant":      `([*+?] | "{" ([0-9]+ ","? | f-re-minmax) "}") "?"?`,
	"f-re-minmax":     `"0," [0-9] | "1," [1-9] | "2," [2-9] | "3," [3-9] | "4," [4-9] | "5," [5-9] | "6," [6-9] | "7," [7-9] | "8," [89] | "9,9"`,
}

// uLetters are the non-ASCII characters of U-labels: letters that IDNA 2008
// makes PVALID (lowercase, NFC, no compatibility mapping), none of them
// right-to-left, a combining mark or under a contextual rule, in Unicode
// since 3.0 or earlier: ß..ö ø..ÿ, Greek ά..ώ, Cyrillic а..џ, Hiragana,
// Katakana (without its middle dot), CJK U+4E00..U+9FA5, Hangul syllables.
const uLetters = `\u00DF-\u00F6\u00F8-\u00FF\u03AC-\u03CE\u0430-\u045F\u3041-\u3096\u30A1-\u30FA\u4E00-\u9FA5\uAC00-\uD7A3`

// ucsChars are RFC 3987's ucschar without the right-to-left blocks (U+0590..
// U+08FF, U+FB1D..U+FDFF, U+FE70..U+FEFF, U+10800..U+10FFF, U+1E800..
// U+1EFFF) and the bidirectional formatting characters (U+200E, U+200F,
// U+202A..U+202E, U+2066..U+2069).
const ucsChars = `\u00A0-\u058F\u0900-\u200D\u2010-\u2029\u202F-\u2065\u206A-\uD7FF\uF900-\uFB1C\uFE00-\uFE6F\uFF00-\uFFEF` +
	`\U00010000-\U000107FF\U00011000-\U0001E7FF\U0001F000-\U0001FFFD\U00020000-\U0002FFFD\U00030000-\U0003FFFD` +
	`\U00040000-\U0004FFFD\U00050000-\U0005FFFD\U00060000-\U0006FFFD\U00070000-\U0007FFFD\U00080000-\U0008FFFD` +
	`\U00090000-\U0009FFFD\U000A0000-\U000AFFFD\U000B0000-\U000BFFFD\U000C0000-\U000CFFFD\U000D0000-\U000DFFFD` +
	`\U000E1000-\U000EFFFD`

// hostBudget is the budget of a host name (hostname, idn-hostname), emailBudget
// that of an e-mail's domain, in units of 16 characters (see format).
const (
	hostBudget  = 15
	emailBudget = 11
)

func init() {
	// f-host-n: a host name of budget n; f-idnhost-n: the same with U-labels.
	host := func(n int) string { return fmt.Sprintf("f-host-%d", n) }
	idnhost := func(n int) string {
		if n < 4 {
			return host(n)
		}
		return fmt.Sprintf("f-idnhost-%d", n)
	}
	chain := func(n int, next func(int) string, labels ...string) string {
		var alts []string
		for _, l := range labels {
			cost := 1
			switch l {
			case "f-lab2":
				cost = 2
			case "f-lab4", "f-ulab":
				cost = 4
			}
			switch {
			case cost < n:
				alts = append(alts, l+` ("." `+next(n-cost)+`)?`)
			case cost == n:
				alts = append(alts, l)
			}
		}
		return strings.Join(alts, " | ")
	}
	for n := 1; n <= hostBudget; n++ {
		formatRules[host(n)] = chain(n, host, "f-lab1", "f-lab2", "f-lab4")
		if n >= 4 {
			formatRules[idnhost(n)] = chain(n, idnhost, "f-lab1", "f-lab2", "f-lab4", "f-ulab")
		}
	}
	formatRules["f-leap"] = leapRule()
	inlineClassRules(formatRules)
	for name, f := range formats {
		f.rules = map[string]string{}
		work := []string{f.root}
		for len(work) > 0 {
			n := work[len(work)-1]
			work = work[:len(work)-1]
			body, ok := formatRules[n]
			if !ok {
				panic("format rule " + n + " is not defined")
			}
			if _, seen := f.rules[n]; seen {
				continue
			}
			f.rules[n] = body
			forEachRef(body, func(r string) {
				if _, seen := f.rules[r]; !seen && strings.HasPrefix(r, "f-") {
					work = append(work, r)
				}
			})
		}
		formats[name] = f
	}
}

// inlineClassRules writes each rule whose body is one character class (f-alnum
// ::= [a-zA-Z0-9]) in place of its references in the other rules' bodies: the
// same language with one rule frame fewer per character. A label's characters
// (f-ldh{0,10}, unrolled into a chain) then sit in the chain's own frames, and a
// position inside a host name is keyed and analysed at half the stack depth;
// host-name and e-mail masks, the slowest of the MaskBench dev split, took about
// half the time (5.5-6.1 ms -> 2.6-3.3 ms without the cross-grammar cache).
func inlineClassRules(rules map[string]string) {
	classes := map[string]string{}
	for name, body := range rules {
		if body != "" && body[0] == '[' && spanEnd(body, 0, ']') == len(body)-1 {
			classes[name] = body
		}
	}
	for name, body := range rules {
		if _, isClass := classes[name]; isClass {
			continue
		}
		var sb strings.Builder
		last := 0
		forEachRefAt(body, func(i, j int) {
			if c, ok := classes[body[i:j]]; ok {
				sb.WriteString(body[last:i])
				sb.WriteString(c)
				last = j
			}
		})
		if last > 0 {
			sb.WriteString(body[last:])
			rules[name] = sb.String()
		}
	}
}

// leapRule writes the times with a leap second: hh:mm:60 is valid where it is
// 23:59:60 in UTC, so where the offset is hh:mm minus 23:59. It lists the
// offsets Z, ±hh:00, ±hh:30 and ±hh:45 (every offset in use), grouped by the
// local hour h: +oh:00 gives h:59 for oh = h+1 and -oh:00 for oh = 23-h, +h:30
// gives h:29 and so does -(23-h):30, +h:45 gives h:44, -(23-h):45 gives h:14.
func leapRule() string {
	alts := make([]string, 0, 24)
	for h := 0; h < 24; h++ {
		next, back := fmt.Sprintf("%02d", (h+1)%24), fmt.Sprintf("%02d", 23-h)
		at59 := fmt.Sprintf(`("+%s" | "-%s") ":00"`, next, back)
		if h == 23 {
			at59 = "(" + at59 + " | [Zz])"
		}
		alts = append(alts, fmt.Sprintf(`"%02d:" (f-leap59 %s | f-leap29 ("+%02d" | "-%s") ":30" | f-leap44 "+%02d:45" | f-leap14 "-%s:45")`,
			h, at59, h, back, h, back))
	}
	return strings.Join(alts, " | ")
}

var formats = map[string]format{
	"date":                  {root: "f-date", minLen: 10, maxLen: 10},
	"time":                  {root: "f-time", minLen: 9, maxLen: -1},
	"date-time":             {root: "f-date-time", minLen: 20, maxLen: -1},
	"duration":              {root: "f-duration", minLen: 3, maxLen: -1},
	"email":                 {root: "f-email", minLen: 3, maxLen: 64 + 1 + emailBudget*16 - 1},
	"idn-email":             {root: "f-idn-email", minLen: 3, maxLen: 64 + 1 + emailBudget*16 - 1},
	"hostname":              {root: "f-host-15", minLen: 1, maxLen: hostBudget*16 - 1},
	"host-name":             {root: "f-host-15", minLen: 1, maxLen: hostBudget*16 - 1}, // draft 3
	"idn-hostname":          {root: "f-idnhost-15", minLen: 1, maxLen: hostBudget*16 - 1},
	"ipv4":                  {root: "f-ipv4", minLen: 7, maxLen: 15},
	"ip-address":            {root: "f-ipv4", minLen: 7, maxLen: 15}, // draft 3
	"ipv6":                  {root: "f-ipv6", minLen: 2, maxLen: 45},
	"uuid":                  {root: "f-uuid", minLen: 36, maxLen: 36},
	"uri":                   {root: "f-uri", minLen: 2, maxLen: -1},
	"uri-reference":         {root: "f-uri-ref", minLen: 0, maxLen: -1},
	"iri":                   {root: "f-iri", minLen: 2, maxLen: -1},
	"iri-reference":         {root: "f-iri-ref", minLen: 0, maxLen: -1},
	"uri-template":          {root: "f-uri-template", minLen: 0, maxLen: -1},
	"json-pointer":          {root: "f-json-pointer", minLen: 0, maxLen: -1},
	"relative-json-pointer": {root: "f-rel-json-ptr", minLen: 1, maxLen: -1},
	"regex":                 {root: "f-regex", minLen: 0, maxLen: -1},
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
