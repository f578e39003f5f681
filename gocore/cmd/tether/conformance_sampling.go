package main

import (
	"encoding/json"
	"io"

	"github.com/tetherlm/tether/gocore/sampling/conformance"
)

// runSamplingConformance runs llama.cpp's sampler vectors (shared/conformance/
// llamacpp_sampling_cases.json) against gocore/sampling and prints one JSON object
// {sampler: {passed, failed, skipped, failures, skips}}. ok is true only if no case
// failed; skipped cases (dist_rng, whose generator is not in the data) carry a reason.
func runSamplingConformance(path string, stdout io.Writer) (ok bool, err error) {
	f, err := conformance.Load(path)
	if err != nil {
		return false, usageError("%v", err)
	}
	rep := conformance.Run(f)
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return false, err
	}
	return rep.OK(), nil
}
