package main

import (
	"flag"
	"strconv"
	"strings"

	"github.com/tetherlm/tether/gocore/model"
	"github.com/tetherlm/tether/gocore/model/cuda"
)

// deviceFlag registers --device on fs.
func deviceFlag(fs *flag.FlagSet) *string {
	return fs.String("device", "cpu", "where the forward pass runs: cpu, or cuda[:N] (the tether-cuda build, `make build-cuda`)")
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
