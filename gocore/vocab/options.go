package vocab

import (
	"crypto/sha256"
	"encoding/binary"
	"runtime"
	"sync"
	"weak"
)

// Option adjusts Load and LoadFile.
type Option func(*config)

type config struct {
	src              string // name of the tokenizer file in error messages
	tokenizerConfig  []byte // nil: absent
	generationConfig []byte
	modelConfig      []byte
	modelSize        int
	addEOG           []string
	removeEOG        []string
	addEOGIDs        []int
	removeEOGIDs     []int
	noDefaultEOG     bool
	noCache          bool
}

// WithTokenizerConfig gives the contents of tokenizer_config.json: its eos_token
// (a string or {"content": ...}) joins the end-of-generation set.
func WithTokenizerConfig(data []byte) Option {
	return func(c *config) { c.tokenizerConfig = data }
}

// WithGenerationConfig gives the contents of the model's generation_config.json:
// its eos_token_id (an id or a list of ids) joins the end-of-generation set.
func WithGenerationConfig(data []byte) Option {
	return func(c *config) { c.generationConfig = data }
}

// WithModelConfig gives the contents of the model's config.json: its eos_token_id
// joins the end-of-generation set and its vocab_size is the model size unless
// WithModelSize says otherwise. Both are also read from text_config (multimodal models).
func WithModelConfig(data []byte) Option {
	return func(c *config) { c.modelConfig = data }
}

// WithModelSize sets the model's vocabulary size (its embedding rows) when it is larger
// than the tokenizer's: the ids in between are padding, never produced. 0 means "same
// as the tokenizer"; a size smaller than the tokenizer's is an error.
func WithModelSize(n int) Option {
	return func(c *config) { c.modelSize = n }
}

// WithEOG adds tokens, by their text in tokenizer.json (e.g. "<|eot_id|>"), to the
// end-of-generation set. A text that names no token is an error.
func WithEOG(texts ...string) Option {
	return func(c *config) { c.addEOG = append(c.addEOG, texts...) }
}

// WithoutEOG removes tokens, by their text, from the end-of-generation set.
func WithoutEOG(texts ...string) Option {
	return func(c *config) { c.removeEOG = append(c.removeEOG, texts...) }
}

// WithEOGIDs adds token ids to the end-of-generation set. An id outside the
// tokenizer is an error.
func WithEOGIDs(ids ...int) Option {
	return func(c *config) { c.addEOGIDs = append(c.addEOGIDs, ids...) }
}

// WithoutEOGIDs removes token ids from the end-of-generation set.
func WithoutEOGIDs(ids ...int) Option {
	return func(c *config) { c.removeEOGIDs = append(c.removeEOGIDs, ids...) }
}

// WithoutDefaultEOG starts the end-of-generation set empty instead of from the config
// files and the known end-of-turn tokens; WithEOG and WithEOGIDs then say all of it.
func WithoutDefaultEOG() Option {
	return func(c *config) { c.noDefaultEOG = true }
}

// WithoutCache loads afresh, neither reusing nor storing a cached Vocab
// (for benchmarks and tests).
func WithoutCache() Option {
	return func(c *config) { c.noCache = true }
}

// withSource names the tokenizer file in error messages.
func withSource(name string) Option {
	return func(c *config) { c.src = name }
}

// cacheKey hashes everything that determines a Vocab.
func (c *config) cacheKey(tokenizerJSON []byte) [32]byte {
	h := sha256.New()
	var n [8]byte
	putBytes := func(b []byte, present bool) {
		v := uint64(len(b))
		if !present {
			v = ^uint64(0)
		}
		binary.LittleEndian.PutUint64(n[:], v)
		h.Write(n[:])
		h.Write(b)
	}
	putStrings := func(ss []string) {
		putBytes(nil, true)
		binary.LittleEndian.PutUint64(n[:], uint64(len(ss)))
		h.Write(n[:])
		for _, s := range ss {
			putBytes([]byte(s), true)
		}
	}
	putInts := func(is []int) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(is)))
		h.Write(n[:])
		for _, i := range is {
			binary.LittleEndian.PutUint64(n[:], uint64(i))
			h.Write(n[:])
		}
	}
	putBytes(tokenizerJSON, true)
	putBytes(c.tokenizerConfig, c.tokenizerConfig != nil)
	putBytes(c.generationConfig, c.generationConfig != nil)
	putBytes(c.modelConfig, c.modelConfig != nil)
	putInts([]int{c.modelSize})
	putStrings(c.addEOG)
	putStrings(c.removeEOG)
	putInts(c.addEOGIDs)
	putInts(c.removeEOGIDs)
	if c.noDefaultEOG {
		h.Write([]byte{1})
	} else {
		h.Write([]byte{0})
	}
	var key [32]byte
	h.Sum(key[:0])
	return key
}

// cache maps the hash of Load's inputs to the Vocab built from them. It holds weak
// pointers, so a Vocab nobody uses any more is collected and its entry removed.
var cache = struct {
	sync.Mutex
	m map[[32]byte]weak.Pointer[Vocab]
}{m: map[[32]byte]weak.Pointer[Vocab]{}}

func cacheGet(key [32]byte) *Vocab {
	cache.Lock()
	defer cache.Unlock()
	if wp, ok := cache.m[key]; ok {
		return wp.Value()
	}
	return nil
}

// cachePut stores v unless another load of the same inputs got there first, and
// returns the Vocab callers should share.
func cachePut(key [32]byte, v *Vocab) *Vocab {
	cache.Lock()
	defer cache.Unlock()
	if wp, ok := cache.m[key]; ok {
		if old := wp.Value(); old != nil {
			return old
		}
	}
	wp := weak.Make(v)
	cache.m[key] = wp
	runtime.AddCleanup(v, func(key [32]byte) {
		cache.Lock()
		defer cache.Unlock()
		if cur, ok := cache.m[key]; ok && cur.Value() == nil {
			delete(cache.m, key)
		}
	}, key)
	return v
}
