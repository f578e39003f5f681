package vocab

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Per-id flags.
const (
	flagSpecial uint8 = 1 << iota // special added token: no text
	flagEOG                       // ends generation
	flagGap                       // no token has this id
	flagAdded                     // from added_tokens
)

// Vocab is a tokenizer's vocabulary: the exact bytes of every token id, which ids are
// special and which end generation. It implements the engine's Vocabulary interface.
// A Vocab never changes after Load returns it and is safe for concurrent use.
//
// Token bytes live in one arena: the bytes of id i are arena[offs[i]:offs[i+1]].
type Vocab struct {
	size      int
	modelSize int
	kind      Kind

	arena []byte
	offs  []uint32 // len size+1

	raw     string   // the pieces as written in tokenizer.json (unescaped), any order
	rawOffs []uint32 // piece of id i is raw[rawOffs[i] : rawOffs[i]+rawLens[i]]
	rawLens []uint32

	flags   []uint8 // len size
	eog     []int   // sorted
	special []int   // sorted; special added tokens (gaps not included)

	leadingSpace  bool
	prependsSpace bool

	indexOnce sync.Once
	index     map[string]int32 // piece -> id, built on first TokenID

	attachMu sync.Mutex
	attached map[any]any // see Attach
}

// Attach returns the value attached to v under key, made by mk on the first call
// for that key (concurrent callers wait for that one call; if mk panics, nothing
// is attached and a later call tries again). An attached value lives exactly as
// long as v: the engine keeps each vocabulary's token trie, and the token sets
// it caches across grammars, here, so a vocabulary nobody uses any more is
// collected with them. Use a key of an unexported type of your own package.
func (v *Vocab) Attach(key any, mk func() any) any {
	v.attachMu.Lock()
	defer v.attachMu.Unlock()
	if x, ok := v.attached[key]; ok {
		return x
	}
	x := mk()
	if v.attached == nil {
		v.attached = map[any]any{}
	}
	v.attached[key] = x
	return x
}

// Size is the number of token ids the tokenizer defines (ids 0..Size()-1): the largest
// id of tokenizer.json's model vocabulary and added_tokens, plus one.
func (v *Vocab) Size() int { return v.size }

// ModelSize is the model's vocabulary size (its logits' width), at least Size(). Ids
// from Size() to ModelSize()-1 are padding: no bytes, special, never produced.
func (v *Vocab) ModelSize() int { return v.modelSize }

// Kind is the decoder kind the token bytes were derived with.
func (v *Vocab) Kind() Kind { return v.kind }

// TokenBytes is the exact byte string token id stands for in the middle of generated
// text; it may end inside a UTF-8 character. It is empty for special tokens, gaps in
// the id space and ids outside 0..Size()-1. The caller must not modify it.
func (v *Vocab) TokenBytes(id int) []byte {
	if uint(id) >= uint(v.size) {
		return nil
	}
	a, b := v.offs[id], v.offs[id+1]
	return v.arena[a:b:b]
}

// IsSpecial reports a token without text: a special added token (BOS, <|eot_id|>, ...),
// an id no token has (a gap), or an id outside 0..Size()-1 (padding included). Such
// ids are produced only where a grammar names them.
func (v *Vocab) IsSpecial(id int) bool {
	if uint(id) >= uint(v.size) {
		return true
	}
	return v.flags[id]&(flagSpecial|flagGap) != 0
}

// IsEOG reports a token that ends generation.
func (v *Vocab) IsEOG(id int) bool {
	return uint(id) < uint(v.size) && v.flags[id]&flagEOG != 0
}

// EOGTokens lists the end-of-generation ids in increasing order (a fresh slice).
func (v *Vocab) EOGTokens() []int { return slices.Clone(v.eog) }

// SpecialTokens lists the ids of the special added tokens in increasing order (a fresh
// slice). Gap and padding ids, which IsSpecial also reports, are not listed.
func (v *Vocab) SpecialTokens() []int { return slices.Clone(v.special) }

// LeadingSpace reports that the decoder drops the space at the start of a decoded
// sequence (SentencePiece's Strip or Metaspace, WordPiece's first word): the first
// generated token's bytes may begin with a space the decoded text does not show.
func (v *Vocab) LeadingSpace() bool { return v.leadingSpace }

// PrependsSpace reports that encoding puts a space (as "▁" or "Ġ") before the text
// (a Prepend normalizer, or a Metaspace or ByteLevel pre-tokenizer's prefix space), so
// the bytes of Encode(text) are " " + text.
func (v *Vocab) PrependsSpace() bool { return v.prependsSpace }

// piece is the token's text as written in tokenizer.json (unescaped).
func (v *Vocab) piece(id int) string {
	o := v.rawOffs[id]
	return v.raw[o : o+v.rawLens[id]]
}

// TokenID finds a token by its text as written in tokenizer.json (e.g. "<|eot_id|>" or
// "Ġthe"); added tokens come first, as in Hugging Face. The index is built on the
// first call.
func (v *Vocab) TokenID(text string) (int, bool) {
	v.indexOnce.Do(v.buildIndex)
	id, ok := v.index[text]
	return int(id), ok
}

func (v *Vocab) buildIndex() {
	v.index = make(map[string]int32, v.size)
	for pass := 0; pass < 2; pass++ { // model pieces, then added tokens over them
		for id := 0; id < v.size; id++ {
			f := v.flags[id]
			if f&flagGap != 0 || (f&flagAdded != 0) != (pass == 1) {
				continue
			}
			v.index[v.piece(id)] = int32(id)
		}
	}
}

// Text shows token id for people: a special token as written in tokenizer.json
// (e.g. "<|eot_id|>"), any other token as its bytes with each byte that is not part
// of valid UTF-8 written \xNN. Gaps and ids outside the tokenizer give "".
func (v *Vocab) Text(id int) string {
	if uint(id) >= uint(v.size) || v.flags[id]&flagGap != 0 {
		return ""
	}
	if v.flags[id]&flagSpecial != 0 {
		return v.piece(id)
	}
	b := v.TokenBytes(id)
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			fmt.Fprintf(&sb, `\x%02X`, b[0])
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
}
