//go:build !cuda

package cuda

import "github.com/tetherlm/tether/gocore/model"

// New returns ErrNotBuilt: this build has no CUDA engine.
func New(Options) (model.Engine, error) { return nil, ErrNotBuilt }

// Built reports whether this binary has the CUDA engine.
func Built() bool { return false }
