package main

import (
	"flag"
	"strconv"
	"strings"

	"github.com/tetherlm/tether/gocore/model"
	"github.com/tetherlm/tether/gocore/model/cuda"
)

// modelFlags are the flags that choose how a model runs (generate, logits).
type modelFlags struct {
	fs       *flag.FlagSet
	threads  *int
	bf16Math *bool
	exact    *bool
	device   *string
	weights  *string
}

// addModelFlags registers --threads, --bf16-math, --exact-bf16, --device and --weights
// on fs, with the command's own help for --threads.
func addModelFlags(fs *flag.FlagSet, threadsHelp string) modelFlags {
	return modelFlags{
		fs:       fs,
		threads:  fs.Int("threads", 0, threadsHelp),
		bf16Math: fs.Bool("bf16-math", true, "bf16 checkpoints: prefill rounds its inputs to bf16 and multiplies in bf16, as PyTorch and llama.cpp do (AVX512-BF16 CPUs; the default, see --exact-bf16)"),
		exact:    fs.Bool("exact-bf16", false, "bf16 checkpoints: prefill multiplies the bf16 weights by float32 inputs exactly, as decode does (about 0.6x the prefill speed of --bf16-math)"),
		device:   fs.String("device", "cpu", "where the forward pass runs: cpu, or cuda[:N] (the tether-cuda build of make build-cuda)"),
		weights:  fs.String("weights", "", weightsHelp),
	}
}

// options returns the model options the flags ask for and a function that releases
// the engine --device made (call it after the model is closed).
func (f modelFlags) options() ([]model.Option, func(), error) {
	mopts := []model.Option{model.WithThreads(*f.threads)}
	mathSet := false // --bf16-math given, rather than its default
	f.fs.Visit(func(fl *flag.Flag) { mathSet = mathSet || fl.Name == "bf16-math" })
	switch {
	case *f.exact && mathSet && *f.bf16Math:
		return nil, nil, usageError("--exact-bf16 and --bf16-math ask for two ways to multiply bf16 weights: give one")
	case *f.exact || !*f.bf16Math:
		mopts = append(mopts, model.WithExactBF16())
	case mathSet:
		mopts = append(mopts, model.WithBF16Math())
	}
	mopts, err := weightsOption(mopts, *f.weights)
	if err != nil {
		return nil, nil, err
	}
	dopts, release, err := deviceEngine(*f.device)
	if err != nil {
		return nil, nil, err
	}
	return append(mopts, dopts...), release, nil
}

// deviceEngine returns the model option for --device and a function that releases the
// engine (after the model is closed); cpu gives no option.
func deviceEngine(device string) ([]model.Option, func(), error) {
	switch {
	case device == "cpu" || device == "":
		return nil, func() {}, nil
	case device == "cuda" || strings.HasPrefix(device, "cuda:"):
		ord := 0
		if rest, ok := strings.CutPrefix(device, "cuda:"); ok {
			n, err := strconv.Atoi(rest)
			if err != nil || n < 0 {
				return nil, nil, usageError("--device %q: want cuda or cuda:N with N a device number", device)
			}
			ord = n
		}
		e, err := cuda.New(cuda.Options{Device: ord})
		if err != nil {
			return nil, nil, &exitError{code: 2, err: err}
		}
		return []model.Option{model.WithEngine(e)}, func() { e.Close() }, nil
	default:
		return nil, nil, usageError("--device %q: want cpu, cuda or cuda:N", device)
	}
}
