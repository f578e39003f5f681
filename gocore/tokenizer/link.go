package tokenizer

// The Rust static library (libtokenizers.a) is built by `make setup` into build/lib at
// the module root. This line lets plain `go build` / `go test` in a checkout find it;
// CGO_LDFLAGS="-L..." adds other places.

// #cgo LDFLAGS: -L${SRCDIR}/../../build/lib
import "C"
