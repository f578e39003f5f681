// Package toolchain_test checks that the pinned toolchain pieces work together on this
// Go version: gorgonia v0.9.18 panics at start-up on Go ≥ 1.25 unless go.mod bumps
// go4.org/unsafe/assume-no-moving-gc; this test binary would not even start then.
package toolchain_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestGorgoniaGraphRuns(t *testing.T) {
	g := G.NewGraph()
	w := G.NewMatrix(g, tensor.Float32, G.WithShape(2, 3), G.WithName("w"),
		G.WithValue(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float32{1, 2, 3, 4, 5, 6}))))
	x := G.NewVector(g, tensor.Float32, G.WithShape(3), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{1, 0, -1}))))
	y, err := G.Mul(w, x)
	require.NoError(t, err)
	m := G.NewTapeMachine(g)
	defer m.Close()
	require.NoError(t, m.RunAll())
	assert.Equal(t, []float32{-2, -2}, y.Value().Data())
}

func TestEagerTransposedMatMul(t *testing.T) {
	// Hugging Face stores linear weights as [out, in]; the decoder multiplies by the
	// transposed view without copying.
	w := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float32{1, 2, 3, 4, 5, 6}))
	x := tensor.New(tensor.WithShape(1, 3), tensor.WithBacking([]float32{1, 1, 1}))
	require.NoError(t, w.T()) // a lazy transpose: only the view changes
	y, err := tensor.MatMul(x, w)
	require.NoError(t, err)
	assert.Equal(t, []float32{6, 15}, y.Data())
}
