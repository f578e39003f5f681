package model

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"unsafe"
)

// DType is the element type of a tensor in a safetensors file.
type DType string

// The element types Float32 converts from. Others (F64, I64, ...) are reported as errors.
const (
	F32  DType = "F32"
	BF16 DType = "BF16"
	F16  DType = "F16"
)

// size returns the bytes per element of a dtype, or 0 if unknown.
func (d DType) size() int {
	switch d {
	case F32, "I32", "U32":
		return 4
	case BF16, F16, "I16", "U16":
		return 2
	case "F64", "I64", "U64":
		return 8
	case "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2":
		return 1
	}
	return 0
}

// TensorInfo describes one tensor of a safetensors file.
type TensorInfo struct {
	Name  string // e.g. "model.layers.0.self_attn.q_proj.weight"
	File  string // path of the file that holds it
	DType DType
	Shape []int
	begin int64 // byte offsets into the file's data section
	end   int64
	file  *stFile
}

// stFile is one opened .safetensors file: its bytes (memory-mapped where possible)
// and where the data section starts.
type stFile struct {
	path    string
	data    []byte // the whole file
	dataOff int64  // 8 + header length
	unmap   func() error
}

// SafeTensors is a set of tensors read from one or more .safetensors files (a sharded
// checkpoint). The files are memory-mapped where the platform allows it, else read;
// f32 tensors returned by Float32 may alias the mapping and are valid until Close.
type SafeTensors struct {
	files   []*stFile
	tensors map[string]*TensorInfo
	source  string // file or directory, for error messages
}

// OpenSafeTensors opens one .safetensors file.
func OpenSafeTensors(path string) (*SafeTensors, error) {
	st := &SafeTensors{tensors: map[string]*TensorInfo{}, source: path}
	if err := st.add(path); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// OpenSafeTensorsDir opens the checkpoint of a Hugging Face model directory: the shards
// listed by model.safetensors.index.json if it exists, else model.safetensors, else every
// *.safetensors file in the directory.
func OpenSafeTensorsDir(dir string) (*SafeTensors, error) {
	var paths []string
	index := filepath.Join(dir, "model.safetensors.index.json")
	if raw, err := os.ReadFile(index); err == nil {
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(raw, &idx); err != nil {
			return nil, fmt.Errorf("model: %s: %v", index, err)
		}
		if len(idx.WeightMap) == 0 {
			return nil, fmt.Errorf("model: %s: empty weight_map", index)
		}
		seen := map[string]bool{}
		for _, f := range idx.WeightMap {
			if !seen[f] {
				seen[f] = true
				paths = append(paths, filepath.Join(dir, f))
			}
		}
		sort.Strings(paths)
	} else if single := filepath.Join(dir, "model.safetensors"); fileExists(single) {
		paths = []string{single}
	} else {
		paths, _ = filepath.Glob(filepath.Join(dir, "*.safetensors"))
		if len(paths) == 0 {
			return nil, fmt.Errorf("model: no model.safetensors, model.safetensors.index.json or *.safetensors in %s", dir)
		}
	}
	st := &SafeTensors{tensors: map[string]*TensorInfo{}, source: dir}
	for _, p := range paths {
		if err := st.add(p); err != nil {
			st.Close()
			return nil, err
		}
	}
	return st, nil
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// add opens one file and records its tensors.
func (st *SafeTensors) add(path string) error {
	data, unmap, err := mapFile(path)
	if err != nil {
		return fmt.Errorf("model: %v", err)
	}
	f := &stFile{path: path, data: data, unmap: unmap}
	st.files = append(st.files, f)
	if len(data) < 8 {
		return fmt.Errorf("model: %s: not a safetensors file (%d bytes, no header length)", path, len(data))
	}
	n := binary.LittleEndian.Uint64(data[:8])
	if n > uint64(len(data)-8) {
		return fmt.Errorf("model: %s: header length %d exceeds the file size %d", path, n, len(data))
	}
	f.dataOff = 8 + int64(n)
	var header map[string]json.RawMessage
	if err := json.Unmarshal(data[8:f.dataOff], &header); err != nil {
		return fmt.Errorf("model: %s: bad safetensors header: %v", path, err)
	}
	dataLen := int64(len(data)) - f.dataOff
	for name, raw := range header {
		if name == "__metadata__" {
			continue
		}
		var h struct {
			DType   DType   `json:"dtype"`
			Shape   []int   `json:"shape"`
			Offsets []int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &h); err != nil {
			return fmt.Errorf("model: %s: tensor %q: bad header entry: %v", path, name, err)
		}
		if len(h.Offsets) != 2 || h.Offsets[0] < 0 || h.Offsets[1] < h.Offsets[0] || h.Offsets[1] > dataLen {
			return fmt.Errorf("model: %s: tensor %q: data_offsets %v outside the data section (%d bytes)", path, name, h.Offsets, dataLen)
		}
		numel := int64(1)
		for _, d := range h.Shape {
			if d < 0 {
				return fmt.Errorf("model: %s: tensor %q: negative dimension in shape %v", path, name, h.Shape)
			}
			numel *= int64(d)
		}
		if sz := h.DType.size(); sz == 0 {
			return fmt.Errorf("model: %s: tensor %q: unknown dtype %q", path, name, h.DType)
		} else if numel*int64(sz) != h.Offsets[1]-h.Offsets[0] {
			return fmt.Errorf("model: %s: tensor %q: shape %v of %s needs %d bytes, data_offsets give %d",
				path, name, h.Shape, h.DType, numel*int64(sz), h.Offsets[1]-h.Offsets[0])
		}
		if prev, dup := st.tensors[name]; dup {
			return fmt.Errorf("model: tensor %q is in both %s and %s", name, prev.File, path)
		}
		st.tensors[name] = &TensorInfo{Name: name, File: path, DType: h.DType, Shape: h.Shape,
			begin: h.Offsets[0], end: h.Offsets[1], file: f}
	}
	return nil
}

// Names returns the names of all tensors, sorted.
func (st *SafeTensors) Names() []string {
	names := make([]string, 0, len(st.tensors))
	for n := range st.tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Info returns the description of a tensor.
func (st *SafeTensors) Info(name string) (TensorInfo, bool) {
	t, ok := st.tensors[name]
	if !ok {
		return TensorInfo{}, false
	}
	info := *t
	info.Shape = slices.Clone(t.Shape)
	return info, true
}

// Float32 returns a tensor's elements as float32 (bf16 and f16 converted) and its shape.
// An f32 tensor whose bytes are suitably aligned aliases the file mapping: do not write
// to it, and do not use it after Close. A missing tensor is a *TensorError.
func (st *SafeTensors) Float32(name string) ([]float32, []int, error) {
	t, ok := st.tensors[name]
	if !ok {
		return nil, nil, &TensorError{Tensor: name, Source: st.source, Missing: true}
	}
	raw := t.file.data[t.file.dataOff+t.begin : t.file.dataOff+t.end]
	shape := slices.Clone(t.Shape)
	switch t.DType {
	case F32:
		n := len(raw) / 4
		if n == 0 {
			return []float32{}, shape, nil
		}
		if uintptr(unsafe.Pointer(&raw[0]))%4 == 0 && littleEndian {
			return unsafe.Slice((*float32)(unsafe.Pointer(&raw[0])), n), shape, nil
		}
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return out, shape, nil
	case BF16:
		out := make([]float32, len(raw)/2)
		for i := range out {
			out[i] = BF16ToFloat32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
		return out, shape, nil
	case F16:
		out := make([]float32, len(raw)/2)
		for i := range out {
			out[i] = F16ToFloat32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
		return out, shape, nil
	}
	return nil, nil, fmt.Errorf("model: %s: tensor %q has dtype %s; supported: F32, BF16, F16", t.File, name, t.DType)
}

// BF16 returns a BF16 tensor's elements as their bit patterns, and its shape: aliasing
// the file mapping when suitably aligned (do not write to it or use it after Close),
// else a copy. A missing tensor is a *TensorError; another dtype is an error.
func (st *SafeTensors) BF16(name string) ([]uint16, []int, error) {
	t, ok := st.tensors[name]
	if !ok {
		return nil, nil, &TensorError{Tensor: name, Source: st.source, Missing: true}
	}
	if t.DType != BF16 {
		return nil, nil, fmt.Errorf("model: %s: tensor %q has dtype %s, want BF16", t.File, name, t.DType)
	}
	raw := t.file.data[t.file.dataOff+t.begin : t.file.dataOff+t.end]
	shape := slices.Clone(t.Shape)
	n := len(raw) / 2
	if n == 0 {
		return []uint16{}, shape, nil
	}
	if uintptr(unsafe.Pointer(&raw[0]))%2 == 0 && littleEndian {
		return unsafe.Slice((*uint16)(unsafe.Pointer(&raw[0])), n), shape, nil
	}
	out := make([]uint16, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	return out, shape, nil
}

// Close releases the files (unmapping them). Slices returned by Float32 that alias a
// mapping must not be used afterwards.
func (st *SafeTensors) Close() error {
	var first error
	for _, f := range st.files {
		if f.unmap != nil {
			if err := f.unmap(); err != nil && first == nil {
				first = err
			}
			f.unmap = nil
		}
	}
	st.files = nil
	return first
}

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// BF16ToFloat32 widens a bfloat16 bit pattern to float32 (exact).
func BF16ToFloat32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// F16ToFloat32 widens an IEEE 754 half-precision bit pattern to float32 (exact,
// including subnormals, infinities and NaN).
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	case mant == 0: // ±0
		return math.Float32frombits(sign)
	}
	// subnormal: mant × 2^-24
	f := float32(mant) * (1.0 / (1 << 24))
	if sign != 0 {
		f = -f
	}
	return f
}
