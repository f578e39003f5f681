//go:build !cuda

package modelcuda_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/model/cuda"
)

// TestCommittedFatbinIsBuiltFromCommittedSource: kernels.fatbin (embedded in the cuda
// build) must be what `make cuda-kernels` made from the kernels.cu beside it, so that a
// change to the kernels cannot ship with a stale binary. Runs in the default build (no
// nvcc), not in the cuda test binary, which runs on a GPU machine without the sources.
// (`make test-cuda-build` also recompiles kernels.cu with the pinned nvcc and compares
// the bytes.)
func TestCommittedFatbinIsBuiltFromCommittedSource(t *testing.T) {
	for _, f := range []struct{ path, want string }{
		{"../../gocore/model/cuda/kernels.cu", cuda.KernelsSourceSHA256},
		{"../../gocore/model/cuda/kernels.fatbin", cuda.KernelsFatbinSHA256},
	} {
		data, err := os.ReadFile(f.path)
		require.NoError(t, err)
		sum := sha256.Sum256(data)
		require.Equalf(t, f.want, hex.EncodeToString(sum[:]),
			"%s does not match kernels_hash.go: run `make cuda-kernels` and commit kernels.fatbin and kernels_hash.go", f.path)
	}
}
