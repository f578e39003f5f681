package main

import (
	"fmt"
	"io"
)

func init() {
	register("conformance", "check tether against reference test vectors (--llamacpp FILE, --sampling FILE)", runConformance)
}

// runConformance runs reference test vectors:
//
//	tether conformance --sampling shared/conformance/llamacpp_sampling_cases.json
//	tether conformance --llamacpp shared/conformance/llamacpp_cases.json
//
// It prints a JSON summary and exits 0 only if every case passed (1 if any failed,
// 2 for bad usage or unreadable data).
func runConformance(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("conformance", stderr)
	samplingFile := fs.String("sampling", "", "llama.cpp sampler vectors (llamacpp_sampling_cases.json)")
	llamacppFile := fs.String("llamacpp", "", "llama.cpp grammar (and schema) vectors (llamacpp_cases.json)")
	maskbenchFile := fs.String("maskbench", "", "JSONSchemaBench corpus (.jsonl): convert every schema, judge every instance")
	maskbenchTok := fs.String("tokenizer", "", "with --maskbench: tokenizer.json to time masks along valid instances")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *maskbenchFile != "" {
		return runMaskbench(*maskbenchFile, *maskbenchTok, nil, stdout, stderr)
	}
	if *samplingFile == "" && *llamacppFile == "" {
		return usageError("nothing to check: give --llamacpp FILE, --sampling FILE or --maskbench FILE")
	}
	if *llamacppFile != "" {
		ok, err := runLlamacppConformance(*llamacppFile, stdout, stderr)
		if err != nil {
			return err
		}
		if !ok {
			return &exitError{code: 1, err: fmt.Errorf("llama.cpp conformance: some cases failed")}
		}
		if *samplingFile == "" {
			return nil
		}
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
