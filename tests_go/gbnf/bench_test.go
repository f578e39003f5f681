package gbnf_test

import (
	"testing"

	"github.com/tetherlm/tether/gocore/gbnf"
)

// BenchmarkParse parses llama.cpp's example grammars (JSON and C among them).
func BenchmarkParse(b *testing.B) {
	cases := loadCases(b)
	for _, name := range []string{"json.gbnf", "c.gbnf"} {
		var src string
		for _, c := range cases.Files {
			if c.Name == name {
				src = c.Grammar
			}
		}
		if src == "" {
			b.Fatalf("grammar %s not in the conformance data", name)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, err := gbnf.Parse(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
