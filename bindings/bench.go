package bindings

import (
	"encoding/json"
	"fmt"
	"runtime"
	"time"

	"github.com/tetherlm/tether/gocore/tokenmask"

	"github.com/tetherlm/tether/gocore/engine"
	"github.com/tetherlm/tether/gocore/safecall"
	"github.com/tetherlm/tether/gocore/schema"
)

// benchResult is what BenchSchema reports for one schema.
type benchResult struct {
	// Error is the conversion or compile error ("" when the schema compiled).
	Error string `json:"error"`
	// CompileUS is schema text -> first mask: conversion, GBNF parse, engine compile
	// and the first FillMask, in microseconds.
	CompileUS float64 `json:"compile_us"`
	// Accepted says, per instance, whether every token was in the mask before it was
	// accepted and an end-of-generation token was allowed after the last one.
	Accepted []bool `json:"accepted"`
	// Masks is the number of mask times written.
	Masks int `json:"masks"`
}

// BenchSchema is the Go-native side of the peer benchmark (tests_py/bench_peers.py):
// the same work the Python API does for a JSON Schema, timed inside Go so that no
// Python call is counted. It converts schemaJSON with the converter options of
// SchemaToGBNF (optionsJSON), compiles it for vocabulary vocabHandle without the
// compiled-grammar cache, fills the first mask, then walks nInst token sequences:
// instance i is ids[ends[i-1]:ends[i]] (ids: int32 values, ends: int64 values). For
// each instance a new matcher fills the mask before every token, checks the token is in
// it and accepts it, and fills one more mask after the last token, which must allow an
// end-of-generation token. The time of every mask of an instance with timed[i] != 0
// (uint8 values) is written, in microseconds, to times (nTimes float64 values, at
// least 2*(nIDs+nInst), else an error and nothing is written): the wall time of mask k at times[k], and the calling thread's CPU
// time over the same call at times[nIDs+nInst+k] (-1 where the platform has no
// per-thread clock). The CPU time is read outside the wall-time pair, so it costs the
// wall time nothing; a mask whose wall time is well above its CPU time spent the
// difference off the CPU (descheduled, or stopped by the garbage collector). A schema
// that does not convert or compile is reported in the result's error, not as a Go
// error.
func BenchSchema(vocabHandle int64, schemaJSON, optionsJSON string, ids uintptr, nIDs int, ends uintptr, nInst int, timed, times uintptr, nTimes int) (string, error) {
	return safecall.Do("BenchSchema", func() (string, error) {
		v, err := vocabs.get(vocabHandle)
		if err != nil {
			return "", err
		}
		opts, err := parseSchemaOptions(optionsJSON)
		if err != nil {
			return "", err
		}
		toks, err := view[int32](ids, nIDs, "ids")
		if err != nil {
			return "", err
		}
		bounds, err := view[int64](ends, nInst, "ends")
		if err != nil {
			return "", err
		}
		flags, err := view[uint8](timed, nInst, "timed")
		if err != nil {
			return "", err
		}
		n := nIDs + nInst
		if nTimes < 2*n {
			return "", fmt.Errorf("times has room for %d values; %d ids and %d instances need %d (wall times, then CPU times)", nTimes, nIDs, nInst, 2*n)
		}
		out, err := view[float64](times, 2*n, "times")
		if err != nil {
			return "", err
		}
		prev := int64(0)
		for i, e := range bounds {
			if e < prev || e > int64(nIDs) {
				return "", fmt.Errorf("ends[%d] = %d outside [%d, %d]", i, e, prev, nIDs)
			}
			prev = e
		}
		res := benchResult{Accepted: make([]bool, nInst)}
		// The thread clock needs the goroutine on one thread (a cgo callback's is).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		wall, cpu := out[:n], out[n:]
		mask := tokenmask.New(v.Size())
		start := time.Now()
		gr, err := func() (*engine.Grammar, error) {
			c, err := schema.Convert([]byte(schemaJSON), opts...)
			if err != nil {
				return nil, err
			}
			gr, err := engine.Compile(c.Grammar, v)
			if err != nil {
				return nil, err
			}
			return gr, gr.NewMatcher().FillMask(mask)
		}()
		if err != nil {
			res.Error = err.Error()
			return encodeBench(res)
		}
		res.CompileUS = micros(time.Since(start))
		eog := v.EOGTokens()
		lo := int64(0)
		for i, hi := range bounds {
			m := gr.NewMatcher()
			ok := true
			for _, id := range toks[lo:hi] {
				c0 := threadCPU()
				t0 := time.Now()
				err := m.FillMask(mask)
				d := time.Since(t0)
				c := threadCPU() - c0
				if flags[i] != 0 {
					wall[res.Masks], cpu[res.Masks] = micros(d), cpuMicros(c, c0)
					res.Masks++
				}
				if err != nil || !mask.Has(int(id)) ||
					m.AcceptToken(int(id)) != nil {
					ok = false
					break
				}
			}
			if ok {
				c0 := threadCPU()
				t0 := time.Now()
				err := m.FillMask(mask)
				d := time.Since(t0)
				c := threadCPU() - c0
				if flags[i] != 0 {
					wall[res.Masks], cpu[res.Masks] = micros(d), cpuMicros(c, c0)
					res.Masks++
				}
				ok = false
				for _, id := range eog {
					if err == nil && mask.Has(id) {
						ok = true
						break
					}
				}
			}
			res.Accepted[i] = ok
			lo = hi
		}
		return encodeBench(res)
	})
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// cpuMicros is a thread CPU interval d in microseconds, or -1 when the clock is not
// available (threadCPU gave start < 0).
func cpuMicros(d time.Duration, start time.Duration) float64 {
	if start < 0 {
		return -1
	}
	return micros(d)
}

func encodeBench(r benchResult) (string, error) {
	b, err := json.Marshal(r)
	return string(b), err
}
