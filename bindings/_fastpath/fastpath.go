// Package main is compiled into tether's Python extension only: setup.py copies this
// folder's files beside the package gopy generates from bindings/ (Go tools skip folders
// starting with "_", so `go build ./...` and `go vet ./...` never see it).
//
// gopy's wrappers parse their arguments with PyArg_ParseTupleAndKeywords and make two
// extra Go→C calls per call to release and retake the GIL, about 0.3 µs, as much as a
// tenth of a typical mask. The per-token calls (fill a bitmask row, accept a token and
// fill) are also exported here to fastpath.c, which parses METH_FASTCALL arguments and
// releases the GIL itself. Everything else still goes through gopy.
package main

/*
#include <stdlib.h>
*/
import "C"

import "github.com/tetherlm/tether/bindings"

// setErr hands err's text to the C caller (which frees it) and returns -1; 0 for nil.
func setErr(err error, errOut **C.char) C.int {
	if err == nil {
		return 0
	}
	*errOut = C.CString(err.Error())
	return -1
}

// tether_fast_accept_fill is bindings.MatcherAcceptFillBitmask (token < 0: fill only).
//
//export tether_fast_accept_fill
func tether_fast_accept_fill(h, token C.longlong, buf C.ulonglong, rows, words, index C.longlong, errOut **C.char) C.int {
	_, err := bindings.MatcherAcceptFillBitmask(int64(h), int(token), uintptr(buf), int(rows), int(words), int(index))
	return setErr(err, errOut)
}

// tether_fast_fill_count is bindings.MatcherFillBitmask: fill a row and count its tokens.
//
//export tether_fast_fill_count
func tether_fast_fill_count(h C.longlong, buf C.ulonglong, rows, words, index C.longlong, count *C.longlong, errOut **C.char) C.int {
	n, err := bindings.MatcherFillBitmask(int64(h), uintptr(buf), int(rows), int(words), int(index))
	*count = C.longlong(n)
	return setErr(err, errOut)
}

// tether_fast_accept_token is bindings.MatcherAcceptToken.
//
//export tether_fast_accept_token
func tether_fast_accept_token(h, token C.longlong, errOut **C.char) C.int {
	_, err := bindings.MatcherAcceptToken(int64(h), int(token))
	return setErr(err, errOut)
}
