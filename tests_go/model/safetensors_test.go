package model_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/model"
)

func TestSafeTensorsReadsF32BF16F16(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.safetensors")
	writeSafetensors(t, path, []stTensor{
		{"a.f32", "F32", []int{2, 3}, f32Bytes(1, -2, 3.5, 0, 1e-3, -7)},
		// bf16: 1.0, -2.0, 0.15625 (0x3E20), -inf
		{"b.bf16", "BF16", []int{4}, u16Bytes(0x3F80, 0xC000, 0x3E20, 0xFF80)},
		// f16: 1.0, -2.0, 65504 (max), 2^-24 (smallest subnormal), 0x3555 = 0.333251953125, -0
		{"c.f16", "F16", []int{3, 2}, u16Bytes(0x3C00, 0xC000, 0x7BFF, 0x0001, 0x3555, 0x8000)},
		{"d.empty", "F32", []int{0, 4}, nil},
	})
	st, err := model.OpenSafeTensors(path)
	require.NoError(t, err)
	defer st.Close()
	assert.Equal(t, []string{"a.f32", "b.bf16", "c.f16", "d.empty"}, st.Names())

	tests := []struct {
		name  string
		shape []int
		want  []float32
	}{
		{"a.f32", []int{2, 3}, []float32{1, -2, 3.5, 0, 1e-3, -7}},
		{"b.bf16", []int{4}, []float32{1, -2, 0.15625, float32(math.Inf(-1))}},
		{"c.f16", []int{3, 2}, []float32{1, -2, 65504, 1.0 / (1 << 24), 0.333251953125, float32(math.Copysign(0, -1))}},
		{"d.empty", []int{0, 4}, []float32{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, shape, err := st.Float32(tc.name)
			require.NoError(t, err)
			assert.Equal(t, tc.shape, shape)
			assert.Equal(t, tc.want, got)
			if tc.name == "c.f16" {
				assert.True(t, math.Signbit(float64(got[5])), "-0 keeps its sign")
			}
		})
	}
	info, ok := st.Info("b.bf16")
	require.True(t, ok)
	assert.Equal(t, model.BF16, info.DType)
	assert.Equal(t, path, info.File)
}

func TestF16Conversion(t *testing.T) {
	for _, tc := range []struct {
		bits uint16
		want float64
	}{
		{0x3C00, 1}, {0x4000, 2}, {0xBC00, -1}, {0x3800, 0.5}, {0x7BFF, 65504},
		{0x0400, 6.103515625e-05}, // smallest normal 2^-14
		{0x03FF, 6.097555160522461e-05}, {0x0001, 5.960464477539063e-08},
		{0x7C00, math.Inf(1)}, {0xFC00, math.Inf(-1)},
	} {
		assert.Equal(t, float32(tc.want), model.F16ToFloat32(tc.bits), "0x%04x", tc.bits)
	}
	assert.True(t, math.IsNaN(float64(model.F16ToFloat32(0x7E00))))
	assert.Equal(t, float32(-2.5), model.BF16ToFloat32(0xC020))
}

func TestSafeTensorsSharded(t *testing.T) {
	dir := t.TempDir()
	writeSafetensors(t, filepath.Join(dir, "model-00001-of-00002.safetensors"),
		[]stTensor{{"x", "F32", []int{2}, f32Bytes(1, 2)}})
	writeSafetensors(t, filepath.Join(dir, "model-00002-of-00002.safetensors"),
		[]stTensor{{"y", "BF16", []int{1}, u16Bytes(0x4040)}})
	idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{},
		"weight_map": map[string]string{"x": "model-00001-of-00002.safetensors", "y": "model-00002-of-00002.safetensors"}})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), idx, 0o644))
	st, err := model.OpenSafeTensorsDir(dir)
	require.NoError(t, err)
	defer st.Close()
	assert.Equal(t, []string{"x", "y"}, st.Names())
	y, _, err := st.Float32("y")
	require.NoError(t, err)
	assert.Equal(t, []float32{3}, y)
	info, _ := st.Info("y")
	assert.Equal(t, filepath.Join(dir, "model-00002-of-00002.safetensors"), info.File)
}

func TestSafeTensorsErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	withHeader := func(h string, data []byte) []byte {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, uint64(len(h)))
		return append(append(b, h...), data...)
	}
	tests := []struct {
		name, file string
		want       []string
	}{
		{"short", write("short.safetensors", []byte{1, 2}), []string{"short.safetensors", "no header length"}},
		{"header too long", write("long.safetensors", withHeader("{}", nil)[:9]), []string{"header length 2 exceeds"}},
		{"bad json", write("json.safetensors", withHeader("{nope", nil)), []string{"bad safetensors header"}},
		{"size mismatch", write("size.safetensors", withHeader(`{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, make([]byte, 8))),
			[]string{`tensor "w"`, "needs 12 bytes", "give 8"}},
		{"outside data", write("off.safetensors", withHeader(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 4))),
			[]string{`tensor "w"`, "outside the data section"}},
		{"unknown dtype", write("dt.safetensors", withHeader(`{"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}}`, make([]byte, 2))),
			[]string{`tensor "w"`, `unknown dtype "Q4"`}},
		{"missing file", filepath.Join(dir, "absent.safetensors"), []string{"absent.safetensors", "no such file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := model.OpenSafeTensors(tc.file)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}

	t.Run("unsupported dtype on read", func(t *testing.T) {
		p := write("i64.safetensors", withHeader(`{"w":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`, make([]byte, 8)))
		st, err := model.OpenSafeTensors(p)
		require.NoError(t, err)
		defer st.Close()
		_, _, err = st.Float32("w")
		require.ErrorContains(t, err, `tensor "w" has dtype I64`)
		_, _, err = st.Float32("nope")
		var te *model.TensorError
		require.ErrorAs(t, err, &te)
		assert.True(t, te.Missing)
		assert.Equal(t, "nope", te.Tensor)
	})
	t.Run("empty dir", func(t *testing.T) {
		_, err := model.OpenSafeTensorsDir(t.TempDir())
		require.ErrorContains(t, err, "no model.safetensors")
	})
}
