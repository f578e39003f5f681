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
	threads  *int
	bf16Math *bool
	device   *string
	weights  *string
}

// addModelFlags registers --threads, --bf16-math, --device and --weights on fs, with
// the command's own help for the first two.
func addModelFlags(fs *flag.FlagSet, threadsHelp, bf16Help string) modelFlags {
	return modelFlags{
		threads:  fs.Int("threads", 0, threadsHelp),
		bf16Math: fs.Bool("bf16-math", false, bf16Help),
		device:   fs.String("device", "cpu", "where the forward pass runs: cpu, or cuda[:N] (the tether-cuda build of make build-cuda)"),
		weights:  fs.String("weights", "", weightsHelp),
	}
}

// options returns the model options the flags ask for and a function that releases
// the engine --device made (call it after the model is closed).
func (f modelFlags) options() ([]model.Option, func(), error) {
	mopts := []model.Option{model.WithThreads(*f.threads)}
	if *f.bf16Math {
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
