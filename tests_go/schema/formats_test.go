package schema_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/schema"
)

// formatChecker converts {"type":"string","format":f} and returns its checker.
func formatChecker(t *testing.T, f string) *checker {
	t.Helper()
	g, ign, err := schema.FromJSONSchema([]byte(`{"type":"string","format":"` + f + `"}`))
	require.NoError(t, err, f)
	require.Empty(t, ign, f)
	return newChecker(t, g)
}

// formatText is s as a JSON string, spelled as an encoder writes it: '"', '\'
// and control characters escaped, everything else as it is.
func formatText(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// TestFormatGrammars: strings (decoded) each format's grammar accepts, rejects
// because they are invalid, and rejects although they are valid (the
// documented narrowing, see the comment above schema's formats). A regex is
// invalid when ECMA-262 refuses it with the u flag (some, such as "]", are
// valid without it); the narrowed ones are valid with and without it.
func TestFormatGrammars(t *testing.T) {
	label63 := strings.Repeat("abcdefghi", 7)
	cases := []struct {
		format                   string
		accept, reject, narrowed []string
	}{
		{"hostname",
			[]string{"www.example.com", "a", "hostname", "h0stn4me", "1host", "a--b.com", "ab-c", "a-b--c", "Example.COM",
				label63 + ".com", "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o", strings.TrimSuffix(strings.Repeat("abcdefghijklmno.", 15), "."),
				label63 + "." + label63 + "." + label63 + ".abc"},
			[]string{"", ".", ".example", "example.", "a..b", "-a", "a-", "a.-b.c", "host_name", "a b", "example.com\n",
				label63 + "x.com", "é.com", "example\uff0ecom", "xn--X", "XN--aa---o47jg78q", "ab--c", "ab--", "xn--hello-txk",
				label63 + "." + label63 + "." + label63 + "." + label63, // 255 characters
				strings.Repeat("a.", 126) + "ab"},                       // 254 characters
			[]string{"xn--9n2bp8q.xn--9t4b11yi5a", strings.Repeat("a.", 15) + "a", label63 + "." + label63 + "." + label63 + ".abcdefghijklmnop.abcdefghijklmnop"}},
		{"host-name", []string{"www.example.com"}, []string{"-a", "xn--X"}, nil},
		{"idn-hostname",
			[]string{"www.example.com", "münchen.de", "실례.테스트", "ßς", "δοκιμή.gr", "пример.рф", "例えば.テスト", "中国", "bü-cher.de",
				"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "ÿÿÿÿÿÿÿÿÿ", "힣ß힣ß힣ß힣ß힣"},
			[]string{"", ".", "a..b", "-hello", "hello-", "üü--ü", "-ü", "ü-", "xn--X", "XN--aa---o47jg78q", "München.de",
				"\u0300hello", "l\u00b7a", "\u03b1\u0375S", "A\u05f3\u05d1", "def\u30fbabc", "\u0915\u200d\u0937", "0a.\u05d0",
				"\uFB01.com", "ſ.com", "a\u3002b", "üüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüüü",
				"\u302e실례.테스트", "-> $1.00 <--"},
			[]string{"xn--ihqwcrb4cv8a8dqg056pqjye", "παράδειγμα.com", "\u05d0\u05f3\u05d1", "l\u00b7l", "a\uff0eb"}},
		{"email",
			[]string{"joe.bloggs@example.com", "te~st@example.com", "~test@example.com", "te.s.t@example.com", "a@b",
				"\"joe bloggs\"@example.com", "\"joe..bloggs\"@example.com", "\"joe@bloggs\"@example.com",
				"joe.bloggs@[127.0.0.1]", "joe.bloggs@[IPv6:::1]", "x@localhost", strings.Repeat("a", 64) + "@x.com",
				"a.b.c.d@x.com", "abcdefghijklmnopqrstuvwxyz.abc@x.com", "!#$%&'*+/=?^_`{|}~-@x.org"},
			[]string{"2962", ".test@example.com", "test.@example.com", "te..st@example.com", "joe bloggs@example.com",
				"@example.com", "joe.bloggs@", "joe.bloggs@invalid=domain.com", "joe.bloggs@[127.0.0.300]",
				"user1@oceania.org, user2@oceania.org", "a@b@c.com", strings.Repeat("a", 65) + "@x.com", "é@x.com",
				"\"Winston Smith\" <winston.smith@recdep.minitrue> (Records Department)", "a@xn--X.com", "a@-b.com"},
			[]string{"\"\"@x.com", "\"a\\\"b\"@x.com", "a.b.c.d.e@x.com", "joe@xn--mnchen-3ya.de"}},
		{"idn-email",
			[]string{"실례@실례.테스트", "joe.bloggs@example.com", "δοκιμή@example.com", "\"δοκιμή\"@example.com",
				"user@münchen.de", "cafe\u0301@example.com", "\u0085@example.com", "\uffff@example.com", "\U0001d54f@example.com",
				strings.Repeat("a", 64) + "@example.com"},
			[]string{"2962", "user\uff20example.com", "a@b@c", ".δ@x.com", "δ..δ@x.com", "a@München.de"},
			[]string{"user@cafe\u0301.com"}},
		{"time",
			[]string{"08:30:06Z", "23:20:50.52Z", "08:30:06+00:20", "12:34:56-00:00", "08:30:06z", "23:59:60Z", "23:59:60z",
				"23:59:60+00:00", "23:59:60-00:00", "01:29:60+01:30", "23:29:60+23:30", "15:59:60.123-08:00", "00:29:60-23:30",
				"05:44:60+05:45", "12:14:60-11:45", "00:59:60+01:00", "12:59:60+13:00"},
			[]string{"008:030:006Z", "8:3:6Z", "22:59:60Z", "23:58:60Z", "23:59:60+01:00", "23:59:60+00:30", "23:59:60-01:00",
				"23:59:60-00:30", "24:00:00Z", "00:60:00Z", "00:00:61Z", "01:02:03+24:00", "01:02:03+00:60", "01:02:03Z+00:30",
				"08:30:06 PST", "12:00:00", "12:00:00.52", "08:30:06-8:000", "2020-11-28T23:55:45Z", "12:59:60+12:00"},
			[]string{"23:39:60-00:20"}},
		{"date-time",
			[]string{"1963-06-19T08:30:06.283185Z", "1998-12-31T23:59:60Z", "1998-12-31T15:59:60.123-08:00", "1963-06-19t08:30:06.283185z"},
			[]string{"1998-12-31T23:59:61Z", "1998-12-31T23:58:60Z", "1998-12-31T22:59:60Z", "1990-02-31T15:59:59.123-08:00",
				"2016-12-31T24:59:60+01:00", "1985-04-12T23:20:50+01"},
			nil},
		{"uri",
			[]string{"http://foo.bar/?baz=qux#quux", "http://[2001:db8::7]/c=GB?objectClass?one", "ldap://[2001:db8::7]/c=GB?objectClass?one",
				"http://[V1.fe]", "http://[v7.a:b]/", "urn:oasis:names:specification:docbook:dtd:xml:4.1.2", "mailto:John.Doe@example.com",
				"file:/etc/hosts", "tel:+1-816-555-1212", "http://-.~_!$&'()*+,;=:%40:80%2f::::::@example.com", "http://999.999.999.999/", "a:"},
			[]string{"//foo.bar/?baz=qux#quux", "/abc", "abc", "http:// shouldfail.com", "bar,baz:foo", "https://[@example.org/test.txt",
				"https://example.org/foobar\u00ae.txt", "https://example.org/foobar\\.txt", "https://example.org/foobar\".txt",
				"http://example.com/%6G", "http://example.com/%", "1http://example.com", "http://example.com:abc/path",
				"http://[::ffff:01.2.3.4]", "http:/[::1]", "http://[1::2::3]", "http://[v.x]", ""},
			nil},
		{"uri-reference",
			[]string{"", "http://foo.bar/?baz=qux#quux", "//foo.bar/?baz=qux#quux", "/abc", "abc", "#fragment", "?query=1", "//",
				"./this:that", "//[::1]:80/p", "a/b:c"},
			[]string{"\\\\WINDOWS\\fileshare", "#frag\\ment", "/foobar\u00ae.txt", "/%zz", "/a\"b", "/[::1]", "//example.com:abc/p",
				"//a@b@example.com/", "//[::ffff:192.168.0.01]/p", "1:b", "a b"},
			nil},
		{"iri",
			[]string{"http://\u0192\u00f8\u00f8.\u00df\u00e5r/?\u2202\u00e9\u0153=\u03c0\u00eex#\u03c0\u00ee\u00fcx", "http://[2001:db8::1]",
				"http://\u0192\u00f8\u00f8.\u00df\u00e5r/\U00010300", "http://x/?q=\U000F0000", "urn:example:resource", "http://192.168.0.1/p"},
			[]string{"http://2001:0db8:85a3:0000:0000:8a2e:0370:7334", "/abc", "\u00e2\u03c0\u03c0", "http://[::ffff:192.168.0.01]",
				"http://x/\n", "http://x/#\U000F0000", "http://x/\u200e", "http://x/\ufdd0", "http://x/\u0085"},
			[]string{"http://x/\u05d0"}},
		{"iri-reference",
			[]string{"", "\u00e2\u03c0\u03c0", "/\u00e2\u03c0\u03c0", "#\u0192r\u00e4gm\u00eant", "//\u0192\u00f8\u00f8.\u00df\u00e5r/?\u2202=\u03c0"},
			[]string{"\\\\WINDOWS\\fil\u00eb\u00df\u00e5r\u00e9", "#\u0192r\u00e4g\\m\u00eant", "1:b", "#\U000F0000"},
			nil},
		{"uri-template",
			[]string{"", "http://example.com/dictionary/{term:1}/{term}", "dictionary/{term:1}/{term}", "{+var}", "{#var}", "{.var}",
				"{/var}", "{;var}", "{?var}", "{&var}", "{var*}", "{x,y}", "{a.b}", "{%41}", "{v:1000}", "a%41b", "a\U0001F600b", "{a_1,b:9,c*}"},
			[]string{"http://example.com/dictionary/{term:1}/{term", "{}", "{a,,b}", "{v:0}", "{v:10000}", "foo}bar", "{a..b}",
				"{v:01}", "a b", "a\u007fb", "{a,}", "{var=def}", "{,+var}", "{a:1*}", "{{a}}", "%4", "a\"b", "a<b"},
			[]string{"a'b", "{=var}"}},
		{"json-pointer",
			[]string{"", "/", "/foo/bar~0/baz~1/%a", "/foo//bar", "/foo/bar/", "/foo", "/a~1b", "/c%d", "/e^f", "/g|h", "/i\\j",
				"/k\"l", "/ ", "/m~0n", "/foo/-", "/~1~0~0~1~1", "/foo/bar/\U0001F60E", "/foo\u0000bar\n\tbaz\u001f"},
			[]string{"/foo/bar~", "#", "#/", "#a", "/~0~", "/~0/~", "/~2", "/~-1", "/~~", "a", "0", "a/a"},
			nil},
		{"relative-json-pointer",
			[]string{"1", "0/foo/bar", "2/0/baz/1/zip", "0#", "120/foo/bar", "100", "0//", "0/k\"l"},
			[]string{"/foo/bar", "-1/foo/bar", "+1/foo/bar", "\u0661/foo", "0##", "01/a", "01#", "", "0/~2", "0/foo/bar~", "1#/foo/bar", "1\n"},
			[]string{"0+1/a"}},
		{"regex",
			[]string{"", "([abc])+\\s+$", "^[a-z0-9]+(?:-[a-z]+)*$", "\\d{3}-\\d{4}", "a{2,5}?", "a{2,}", "a{10}", "[^\\]]", "[]", "[^]",
				"\\cA", "\\u0041\\x41", "a|b|", "()", "(?:)*", "[a\\-z]", "\\/path\\.json$", "caf\u00e9", "[A-Za-z_][A-Za-z0-9_]*",
				"\\bword\\B", "a\"b", "[a-f0-9]", "[x-z]", "[\\b\\d\\\\]", "x{0,9}", "\\\\"},
			[]string{"^(abc]", "\\a", "(?P<name>x)", "(?P<n>a)(?P=n)", "(?#comment)a", "(?i)abc", "(?ims)abc", "a**", "*a", "a|*",
				"[z-a]", "a{3,2}", "a{,5}", "]", "}", "{", "(a", "a)", "x{2}{3}", "[a-\\d]", "^*", "\\b+", "\\", "[a"},
			[]string{"(?<name>x)", "(?<n>a)\\k<n>", "(?<=a+)b", "a(?=b)", "(a)\\1", "\\p{L}", "[b-f]", "a{2,10}", "\\u{41}"}},
		{"ipv4", []string{"192.168.0.1", "0.0.0.0"}, []string{"127.0.0.0.1", "256.1.1.1", "01.1.1.1"}, nil},
		{"ip-address", []string{"192.168.0.1"}, []string{"256.1.1.1"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.format, func(t *testing.T) {
			c := formatChecker(t, tc.format)
			for _, s := range tc.accept {
				assert.True(t, c.accepts(formatText(s)), "%s should accept %q", tc.format, s)
			}
			for _, s := range tc.reject {
				assert.False(t, c.accepts(formatText(s)), "%s should reject %q", tc.format, s)
			}
			for _, s := range tc.narrowed {
				assert.False(t, c.accepts(formatText(s)), "%s is narrowed: it should reject %q", tc.format, s)
			}
		})
	}
}

// TestFormatQuotesAreEscapes: a format that writes '"' or '\' writes them as
// JSON escapes, never raw (which would end the string or start an escape).
func TestFormatQuotesAreEscapes(t *testing.T) {
	email := formatChecker(t, "email")
	assert.True(t, email.accepts(`"\"a b\"@x.com"`))
	assert.False(t, email.accepts(`""a b"@x.com"`))
	ptr := formatChecker(t, "json-pointer")
	assert.True(t, ptr.accepts(`"/a\\b\"c\n\u0001"`))
	assert.False(t, ptr.accepts(`"/a\/b"`), "an escaped '/' is not written (the grammar is narrower than JSON)")
	re := formatChecker(t, "regex")
	assert.True(t, re.accepts(`"^\\d+\"$"`))
	assert.False(t, re.accepts(`"^\d+$"`), `\d is not a JSON escape`)
}

// TestLeapSecondsExact: hh:mm:60 with offset ±oh:om is accepted only where it
// is 23:59:60 in UTC, and for every such time whose offset's minutes are 00,
// 30 or 45.
func TestLeapSecondsExact(t *testing.T) {
	c := formatChecker(t, "time")
	dt := formatChecker(t, "date-time")
	for h := 0; h < 24; h++ {
		for _, m := range []int{0, 14, 15, 29, 30, 44, 45, 58, 59} {
			for _, sign := range []int{1, -1} {
				for oh := 0; oh < 24; oh++ {
					for _, om := range []int{0, 1, 15, 30, 45, 59} {
						s := fmt.Sprintf("%02d:%02d:60%c%02d:%02d", h, m, map[int]byte{1: '+', -1: '-'}[sign], oh, om)
						utc := ((h*60+m-sign*(oh*60+om))%1440 + 1440) % 1440
						valid := utc == 23*60+59
						got := c.accepts(formatText(s))
						if valid && (om == 0 || om == 30 || om == 45) {
							require.True(t, got, "%s is 23:59:60 UTC", s)
						} else if !valid {
							require.False(t, got, "%s is not 23:59:60 UTC", s)
						}
						if h == 23 || h == 5 {
							require.Equal(t, got, dt.accepts(formatText("2016-12-31T"+s)), s)
						}
					}
				}
			}
		}
	}
	assert.True(t, c.accepts(`"23:59:60.999Z"`))
	assert.False(t, c.accepts(`"23:59:60.Z"`))
}

// hostLengths are label lengths at the edges of the host name grammar.
var hostLengths = []int{0, 1, 2, 3, 4, 5, 9, 14, 15, 16, 17, 30, 31, 32, 33, 62, 63, 64}

// ldhHost reports whether s is a host name under the hostname grammar's rules
// (RFC 1123 labels of 1..63 letters, digits and '-', no '-' first or last, no
// "--" in the 3rd and 4th place, at most 253 characters).
func ldhHost(s string) bool {
	if len(s) > 253 {
		return false
	}
	label := regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$`)
	for _, l := range strings.Split(s, ".") {
		if !label.MatchString(l) || len(l) >= 4 && l[2:4] == "--" {
			return false
		}
	}
	return true
}

// randomHost makes a name of random labels, biased to the edges: lengths
// around the given ones, hyphens in the 3rd and 4th place, empty labels.
func randomHost(rng *rand.Rand, alphabet []string, maxLabels int, lengths []int) string {
	n := 1 + rng.Intn(maxLabels)
	labels := make([]string, n)
	for i := range labels {
		k := lengths[rng.Intn(len(lengths))]
		if rng.Intn(3) == 0 {
			k = rng.Intn(k + 1)
		}
		var sb strings.Builder
		for j := 0; j < k; j++ {
			if rng.Intn(8) == 0 {
				sb.WriteByte('-')
			} else {
				sb.WriteString(alphabet[rng.Intn(len(alphabet))])
			}
		}
		labels[i] = sb.String()
	}
	return strings.Join(labels, ".")
}

// TestHostnameSound: every name the hostname grammar accepts is valid and has
// at most 239 characters; every valid name of at most 15 labels of at most 15
// characters is accepted.
func TestHostnameSound(t *testing.T) {
	c := formatChecker(t, "hostname")
	email := formatChecker(t, "email")
	rng := rand.New(rand.NewSource(7))
	alphabet := []string{"a", "Z", "0", "9", "x", "n"}
	accepted := 0
	for i := 0; i < 4000; i++ {
		s := randomHost(rng, alphabet, 18, hostLengths)
		got := c.accepts(formatText(s))
		if got {
			accepted++
			require.True(t, ldhHost(s), "accepted an invalid host name %q", s)
			require.LessOrEqual(t, len(s), 239, s)
		}
		labels := strings.Split(s, ".")
		short := len(labels) <= 15
		for _, l := range labels {
			short = short && len(l) <= 15
		}
		if ldhHost(s) && short {
			require.True(t, got, "rejected %q", s)
		}
		// an e-mail's domain: the same labels, at most 175 characters
		if got := email.accepts(formatText("a@" + s)); got {
			require.True(t, ldhHost(s) && len(s) <= 175, "accepted the e-mail domain %q", s)
		}
	}
	assert.Greater(t, accepted, 300)
	// names of a labels of 63 characters, b of 31 and c of 15 (in both
	// orders): accepted exactly within the budget 4a+2b+c <= 15, so never
	// longer than 239 characters
	for a := 0; a <= 4; a++ {
		for b := 0; b <= 8; b++ {
			for c0 := 0; c0 <= 17; c0++ {
				if a+b+c0 == 0 {
					continue
				}
				var labels []string
				for i := 0; i < a; i++ {
					labels = append(labels, strings.Repeat("a", 63))
				}
				for i := 0; i < b; i++ {
					labels = append(labels, strings.Repeat("b", 31))
				}
				for i := 0; i < c0; i++ {
					labels = append(labels, strings.Repeat("c", 15))
				}
				s := strings.Join(labels, ".")
				within := 4*a+2*b+c0 <= 15
				require.Equal(t, within, c.accepts(formatText(s)), "%d, %d, %d: %d characters", a, b, c0, len(s))
				slices.Reverse(labels)
				require.Equal(t, within, c.accepts(formatText(strings.Join(labels, "."))), "%d, %d, %d reversed", a, b, c0)
				if within {
					require.LessOrEqual(t, len(s), 239)
				}
			}
		}
	}
}

// TestEmailLocalPartSound: a dot-atom local part is accepted only when
// well-formed and at most 64 characters; one of at most 4 atoms of at most 15
// characters, or a single atom, is always accepted.
func TestEmailLocalPartSound(t *testing.T) {
	c := formatChecker(t, "email")
	rng := rand.New(rand.NewSource(3))
	lengths := []int{0, 1, 7, 15, 16, 31, 32, 33, 47, 48, 63, 64, 65}
	dotAtom := regexp.MustCompile(`^[a-zA-Z0-9!#$%&'*+/=?^_` + "`" + `{|}~-]+(\.[a-zA-Z0-9!#$%&'*+/=?^_` + "`" + `{|}~-]+)*$`)
	for i := 0; i < 3000; i++ {
		atoms := make([]string, 1+rng.Intn(6))
		for j := range atoms {
			k := lengths[rng.Intn(len(lengths))]
			if rng.Intn(2) == 0 {
				k = rng.Intn(k + 1)
			}
			atoms[j] = strings.Repeat("x", k)
		}
		local := strings.Join(atoms, ".")
		got := c.accepts(formatText(local + "@example.com"))
		valid := dotAtom.MatchString(local) && len(local) <= 64
		if got {
			require.True(t, valid, "accepted the local part %q", local)
		}
		short := len(atoms) <= 4
		for _, a := range atoms {
			short = short && len(a) <= 15
		}
		if valid && (short || len(atoms) == 1) {
			require.True(t, got, "rejected the local part %q", local)
		}
	}
}

// punycodeLen is the length of the ACE form ("xn--" and the Punycode of RFC
// 3492) of a label with non-ASCII characters.
func punycodeLen(label string) int {
	const base, tmin, tmax, skew, damp = 36, 1, 26, 38, 700
	rs := []rune(label)
	n, delta, bias := 128, 0, 72
	out := 0
	b := 0
	for _, r := range rs {
		if r < 0x80 {
			b++
		}
	}
	out += b
	if b > 0 {
		out++ // the delimiter
	}
	adapt := func(delta, points int, first bool) int {
		if first {
			delta /= damp
		} else {
			delta /= 2
		}
		delta += delta / points
		k := 0
		for delta > ((base-tmin)*tmax)/2 {
			delta /= base - tmin
			k += base
		}
		return k + (base-tmin+1)*delta/(delta+skew)
	}
	for h := b; h < len(rs); {
		m := rune(0x10FFFF + 1)
		for _, r := range rs {
			if int(r) >= n && r < m {
				m = r
			}
		}
		delta += (int(m) - n) * (h + 1)
		n = int(m)
		for _, r := range rs {
			if int(r) < n {
				delta++
			}
			if int(r) == n {
				q := delta
				for k := base; ; k += base {
					t := k - bias
					if t < tmin {
						t = tmin
					} else if t > tmax {
						t = tmax
					}
					out++
					if q < t {
						break
					}
					q = (q - t) / (base - t)
				}
				bias = adapt(delta, h+1, h == b)
				delta = 0
				h++
			}
		}
		delta++
		n++
	}
	return len("xn--") + out
}

// TestULabelBound checks the bound behind the U-labels' length: a U-label of
// at most 9 characters from letters up to U+D7A3 has an A-label of at most 4
// + (b+1) + 6n characters (b basic, n other characters): every delta Punycode
// writes is at most (0xD7A3-0x80)*10+10, and such a number takes at most 6
// digits whatever the bias.
func TestULabelBound(t *testing.T) {
	const base, tmin, tmax = 36, 1, 26
	maxDelta := (0xD7A3-0x80)*10 + 10
	for bias := 0; bias < 2000; bias++ {
		q, digits := maxDelta, 0
		for k := base; ; k += base {
			th := min(max(k-bias, tmin), tmax)
			digits++
			if q < th {
				break
			}
			q = (q - th) / (base - th)
		}
		require.LessOrEqual(t, digits, 6, "bias %d", bias)
	}
	for n := 1; n <= 9; n++ {
		b := 9 - n
		size := 4 + 6*n
		if b > 0 {
			size += b + 1
		}
		require.LessOrEqual(t, size, 63)
	}
}

// TestIDNHostnameSound: every label the idn-hostname grammar accepts is an
// LDH label or a U-label of allowed letters whose A-label has at most 63
// characters, and the whole name's A-form has at most 253.
func TestIDNHostnameSound(t *testing.T) {
	require.Equal(t, len("xn--mnchen-3ya"), punycodeLen("münchen"))
	require.Equal(t, len("xn--9n2bp8q"), punycodeLen("실례"))
	require.Equal(t, len("xn--ihqwcrb4cv8a8dqg056pqjye"), punycodeLen("他们为什么不说中文"))
	c := formatChecker(t, "idn-hostname")
	rng := rand.New(rand.NewSource(11))
	// the allowed letters' extremes (largest deltas), and characters that are
	// not allowed
	alphabet := []string{"a", "z", "0", "ß", "ö", "ø", "ÿ", "ά", "ώ", "а", "џ", "ぁ", "ゖ", "ァ", "ヺ", "一", "龥", "가", "힣",
		"A", "·", "\u0300", "À", "ſ", "\u05d0", "÷", "ー", "\u3007"}
	allowed := regexp.MustCompile(`^[a-z0-9\-\x{DF}-\x{F6}\x{F8}-\x{FF}\x{3AC}-\x{3CE}\x{430}-\x{45F}\x{3041}-\x{3096}\x{30A1}-\x{30FA}\x{4E00}-\x{9FA5}\x{AC00}-\x{D7A3}]+$`)
	accepted, ulabels := 0, 0
	for i := 0; i < 6000; i++ {
		s := randomHost(rng, alphabet, 16, hostLengths)
		if rng.Intn(2) == 0 { // short U-labels, the ones that can be accepted
			s = randomHost(rng, alphabet[:19], 5, []int{1, 2, 3, 4, 5, 8, 9, 10})
		}
		if !c.accepts(formatText(s)) {
			continue
		}
		accepted++
		total := -1
		for _, l := range strings.Split(s, ".") {
			ascii := utf8.RuneCountInString(l) == len(l)
			if ascii {
				require.True(t, ldhHost(l), "accepted an invalid label %q in %q", l, s)
				total += len(l) + 1
				continue
			}
			ulabels++
			require.True(t, allowed.MatchString(l), "accepted a label with a letter not allowed: %q", l)
			rs := []rune(l)
			require.True(t, rs[0] != '-' && rs[len(rs)-1] != '-' && !(len(rs) >= 4 && rs[2] == '-' && rs[3] == '-'), l)
			a := punycodeLen(l)
			require.LessOrEqual(t, a, 63, "the A-label of %q is too long", l)
			total += a + 1
		}
		require.LessOrEqual(t, total, 253, "the A-form of %q is too long", s)
	}
	assert.Greater(t, accepted, 500)
	assert.Greater(t, ulabels, 300)
	// the longest U-labels of the largest letters still fit
	for i := 0; i < 2000; i++ {
		var sb strings.Builder
		for j := 0; j < 9; j++ {
			sb.WriteString(alphabet[rng.Intn(19)])
		}
		l := strings.Trim(sb.String(), "-")
		if c.accepts(formatText(l)) && utf8.RuneCountInString(l) != len(l) {
			require.LessOrEqual(t, punycodeLen(l), 63, l)
		}
	}
}

// TestFormatLengthsDeclared: a length limit a format implies is dropped, a
// tighter one is refused (so minLen and maxLen are bounds of what each grammar
// accepts, as TestHostnameSound checks for the host names).
func TestFormatLengthsDeclared(t *testing.T) {
	for _, tc := range []struct {
		schema string
		ok     bool
	}{
		{`{"type":"string","format":"hostname","maxLength":253}`, true},
		{`{"type":"string","format":"hostname","maxLength":239}`, true},
		{`{"type":"string","format":"hostname","maxLength":238}`, false},
		{`{"type":"string","format":"email","maxLength":254}`, true},
		{`{"type":"string","format":"idn-hostname","minLength":1}`, true},
		{`{"type":"string","format":"relative-json-pointer","minLength":1}`, true},
		{`{"type":"string","format":"json-pointer","minLength":1}`, false},
		{`{"type":"string","format":"uri","maxLength":2000}`, false},
	} {
		_, _, err := schema.FromJSONSchema([]byte(tc.schema))
		if tc.ok {
			assert.NoError(t, err, tc.schema)
		} else {
			assert.Error(t, err, tc.schema)
		}
	}
}

// TestFormatGrammarsInlineClassRules: a format rule whose body is one character
// class (a host-name label's [a-zA-Z0-9\-], an e-mail atom's characters) is written
// in place of its references, so no format grammar keeps such a rule. Each would
// be a rule frame of its own under every character, doubling the stack depth of
// the positions inside a label or an atom (and the analyses of a mask there).
func TestFormatGrammarsInlineClassRules(t *testing.T) {
	classOnly := regexp.MustCompile(`(?m)^(f-\S+) ::= (\[(?:[^\]\\]|\\.)*\])$`)
	for _, f := range []string{"hostname", "idn-hostname", "email", "idn-email", "uri", "iri", "uri-reference",
		"date-time", "ipv6", "uuid", "json-pointer", "uri-template"} {
		g, _, err := schema.FromJSONSchema([]byte(`{"type":"string","format":"` + f + `"}`))
		require.NoError(t, err, f)
		for _, m := range classOnly.FindAllStringSubmatch(g, -1) {
			t.Errorf("%s: rule %s is the class %s alone: inline it", f, m[1], m[2])
		}
	}
	host, _, err := schema.FromJSONSchema([]byte(`{"type":"string","format":"hostname"}`))
	require.NoError(t, err)
	assert.Contains(t, host, `f-lab2 ::= f-lab-head [a-zA-Z0-9\-]{11,26} [a-zA-Z0-9]`)
}
