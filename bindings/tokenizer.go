package bindings

import (
	"fmt"
	"unsafe"

	"github.com/tetherlm/tether/gocore/safecall"
	"github.com/tetherlm/tether/gocore/tokenizer"
)

var tokenizers = newRegistry[*tokenizer.Tokenizer]("tokenizer")

// Version is tether's version string.
func Version() string { return version }

const version = "0.1.0"

// TokenizerFromFile loads a tokenizer.json file and returns its handle.
func TokenizerFromFile(path string) (int64, error) {
	return safecall.Do("TokenizerFromFile", func() (int64, error) {
		t, err := tokenizer.FromFile(path)
		if err != nil {
			return 0, err
		}
		return tokenizers.add(t), nil
	})
}

// TokenizerFromJSON loads a tokenizer from the text of a tokenizer.json and returns its handle.
func TokenizerFromJSON(json string) (int64, error) {
	return safecall.Do("TokenizerFromJSON", func() (int64, error) {
		t, err := tokenizer.FromJSON([]byte(json))
		if err != nil {
			return 0, err
		}
		return tokenizers.add(t), nil
	})
}

// TokenizerVocabSize is the number of ids the tokenizer knows, added tokens included.
func TokenizerVocabSize(h int64) (int, error) {
	return safecall.Do("TokenizerVocabSize", func() (int, error) {
		t, err := tokenizers.get(h)
		if err != nil {
			return 0, err
		}
		return t.VocabSize(), nil
	})
}

// TokenizerEncode encodes text and writes the ids as uint32 into the caller's buffer
// out, which has room for capacity ids. It returns the number of ids; when that is
// more than capacity nothing is written and the caller retries with a larger buffer.
func TokenizerEncode(h int64, text string, addSpecial bool, out uintptr, capacity int) (int, error) {
	return safecall.Do("TokenizerEncode", func() (int, error) {
		t, err := tokenizers.get(h)
		if err != nil {
			return 0, err
		}
		ids, err := t.Encode(text, addSpecial)
		if err != nil {
			return 0, err
		}
		if len(ids) > capacity {
			return len(ids), nil
		}
		if len(ids) > 0 {
			dst, err := view[uint32](out, capacity, "out")
			if err != nil {
				return 0, err
			}
			copy(dst, ids)
		}
		return len(ids), nil
	})
}

// TokenizerDecode decodes n uint32 ids read from the caller's buffer ids.
func TokenizerDecode(h int64, ids uintptr, n int, skipSpecial bool) (string, error) {
	return safecall.Do("TokenizerDecode", func() (string, error) {
		t, err := tokenizers.get(h)
		if err != nil {
			return "", err
		}
		if n == 0 {
			return "", nil
		}
		src, err := view[uint32](ids, n, "ids")
		if err != nil {
			return "", err
		}
		// Copy out of the caller's memory before handing the slice to cgo.
		return t.Decode(append([]uint32(nil), src...), skipSpecial)
	})
}

// TokenizerClose frees the tokenizer; its handle is invalid afterwards.
func TokenizerClose(h int64) (bool, error) {
	return safecall.Do("TokenizerClose", func() (bool, error) {
		t, err := tokenizers.remove(h)
		if err != nil {
			return false, err
		}
		return true, t.Close()
	})
}

// view is n values of type T at addr: the data pointer of a caller-owned, contiguous CPU
// buffer (a numpy array or torch tensor) that stays alive for the call. The view must
// not outlive the call. name says which argument, for errors.
func view[T any](addr uintptr, n int, name string) ([]T, error) {
	var zero T
	switch {
	case n < 0:
		return nil, fmt.Errorf("%s: negative length %d", name, n)
	case n == 0:
		return nil, nil
	case addr == 0:
		return nil, fmt.Errorf("%s: null buffer address", name)
	case addr%unsafe.Alignof(zero) != 0:
		return nil, fmt.Errorf("%s: buffer address 0x%x is not aligned for %T", name, addr, zero)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(addr)), n), nil
}
