// Package tokenizer encodes and decodes text with a Hugging Face tokenizer.json, through
// the Rust tokenizers library (github.com/daulet/tokenizers, cgo).
//
// It is the only package of tether that links the Rust static library, so that the
// grammar engine, the schema converter and the samplers build and test with plain Go.
// A Rust panic would abort the process, so inputs are checked here before they reach
// Rust: text must be valid UTF-8 without NUL bytes (the C interface takes C strings),
// and ids must lie inside the vocabulary.
package tokenizer

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unicode/utf8"

	"github.com/daulet/tokenizers"
)

// ErrClosed is returned by the methods of a Tokenizer after Close.
var ErrClosed = errors.New("tokenizer is closed")

// Tokenizer is a loaded Hugging Face tokenizer. It is safe for concurrent use;
// Close waits for calls in flight.
type Tokenizer struct {
	mu        sync.RWMutex
	t         *tokenizers.Tokenizer // nil once closed
	vocabSize int
	source    string // where it came from, for error messages
}

// FromFile loads a tokenizer.json file.
func FromFile(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return load(data, path)
}

// FromJSON loads a tokenizer from the contents of a tokenizer.json file.
func FromJSON(data []byte) (*Tokenizer, error) {
	return load(data, "tokenizer.json")
}

func load(data []byte, source string) (*Tokenizer, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("tokenizer: %s is empty", source)
	}
	t, err := tokenizers.FromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: cannot load %s: %v", source, err)
	}
	return &Tokenizer{t: t, vocabSize: int(t.VocabSize()), source: source}, nil
}

// VocabSize is the number of ids the tokenizer knows, added tokens included.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// Encode turns text into token ids. addSpecial adds the tokens the tokenizer's
// post-processor puts around a sequence (a BOS token, for example).
func (t *Tokenizer) Encode(text string, addSpecial bool) ([]uint32, error) {
	if err := checkText(text); err != nil {
		return nil, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.t == nil {
		return nil, ErrClosed
	}
	enc := t.t.EncodeWithOptions(text, addSpecial) // ids only: no token strings cross cgo
	return enc.IDs, nil
}

// Decode turns ids back into text; skipSpecial leaves out special tokens.
// Ids that are partial UTF-8 on their own decode to U+FFFD, as in Hugging Face.
func (t *Tokenizer) Decode(ids []uint32, skipSpecial bool) (string, error) {
	for i, id := range ids {
		if int64(id) >= int64(t.vocabSize) {
			return "", fmt.Errorf("tokenizer: token id %d at position %d is outside the vocabulary (size %d)", id, i, t.vocabSize)
		}
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.t == nil {
		return "", ErrClosed
	}
	return t.t.Decode(ids, skipSpecial), nil
}

// Close frees the Rust tokenizer. Calling it twice is harmless.
func (t *Tokenizer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.t != nil {
		err := t.t.Close()
		t.t = nil
		return err
	}
	return nil
}

// checkText rejects what the C interface would silently change: NUL bytes end a C
// string early, and invalid UTF-8 is replaced by U+FFFD on the Rust side.
func checkText(text string) error {
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return fmt.Errorf("tokenizer: text is not valid UTF-8 at byte %d (0x%02x)", i, text[i])
		case r == 0:
			return fmt.Errorf("tokenizer: text contains a NUL byte at byte %d, which the Rust tokenizer interface cannot take", i)
		}
		i += n
	}
	return nil
}
