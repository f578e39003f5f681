package main

import (
	"fmt"
	"io"
)

func init() {
	register("conformance", "check tether against reference test vectors (--sampling FILE)", runConformance)
}

// runConformance runs reference test vectors:
//
//	tether conformance --sampling shared/conformance/llamacpp_sampling_cases.json
//
// It prints a JSON summary and exits 0 only if every case passed (1 if any failed,
// 2 for bad usage or unreadable data).
func runConformance(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("conformance", stderr)
	samplingFile := fs.String("sampling", "", "llama.cpp sampler vectors (llamacpp_sampling_cases.json)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *samplingFile == "" {
		return usageError("nothing to check: give --sampling FILE")
	}
	ok, err := runSamplingConformance(*samplingFile, stdout)
	if err != nil {
		return err
	}
	if !ok {
		return &exitError{code: 1, err: fmt.Errorf("sampling conformance: some cases failed")}
	}
	return nil
}
