package vocab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// maxTokens bounds token ids, far above any real vocabulary (Gemma-3 has 262,145).
const maxTokens = 1 << 24

// Load reads a vocabulary from the contents of a Hugging Face tokenizer.json. Loading
// the same inputs (file and options) again returns the same *Vocab while it is in use.
// Errors name the file and the field or token at fault.
func Load(tokenizerJSON []byte, opts ...Option) (v *Vocab, err error) {
	c := config{src: "tokenizer.json"}
	for _, o := range opts {
		o(&c)
	}
	var key [32]byte
	if !c.noCache {
		key = c.cacheKey(tokenizerJSON)
		if v := cacheGet(key); v != nil {
			return v, nil
		}
	}
	defer func() { // a bug must not take the caller down with malformed input
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("vocab: internal error loading %s: %v", c.src, r)
		}
	}()
	b := &builder{src: c.src, data: tokenizerJSON, cfg: &c}
	v, err = b.build()
	if err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	if !c.noCache {
		v = cachePut(key, v)
	}
	return v, nil
}

// LoadFile reads the tokenizer.json at path, with tokenizer_config.json,
// generation_config.json and config.json from the same folder when they exist.
// Options given here take precedence over those files.
func LoadFile(path string, opts ...Option) (*Vocab, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	dir := filepath.Dir(path)
	var auto []Option
	for _, f := range []struct {
		name string
		opt  func([]byte) Option
	}{
		{"tokenizer_config.json", WithTokenizerConfig},
		{"generation_config.json", WithGenerationConfig},
		{"config.json", WithModelConfig},
	} {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		switch {
		case err == nil:
			auto = append(auto, f.opt(b))
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("vocab: %w", err)
		}
	}
	all := append(append([]Option{withSource(path)}, auto...), opts...)
	return Load(data, all...)
}

// builder holds the state of one Load.
type builder struct {
	src  string
	data []byte
	cfg  *config

	modelType string

	raw     []byte  // unescaped pieces, in the order read
	entries []entry // model vocabulary then added tokens
	nModel  int     // entries[:nModel] are the model vocabulary

	v *Vocab
}

// entry is one token read from the file: its id and its piece, raw[off:off+n].
type entry struct {
	id, off, n uint32
	special    bool
}

// fieldError wraps an encoding/json error from a sub-value that starts at byte base.
func (b *builder) fieldError(path string, base int, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%s: %s: invalid JSON at byte offset %d: %v", b.src, path, base+int(se.Offset), err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := path
		if te.Field != "" {
			field += "." + te.Field
		}
		return fmt.Errorf("%s: %s: got JSON %s where %s belongs (at byte offset %d)", b.src, field, te.Value, te.Type, base+int(te.Offset))
	}
	return fmt.Errorf("%s: %s (at byte offset %d): %v", b.src, path, base, err)
}

func unmarshalAt(raw []byte, v any) error { return json.Unmarshal(raw, v) }

func isNull(raw []byte) bool { return raw == nil || bytes.Equal(raw, []byte("null")) }

// rawField is a top-level member of tokenizer.json, kept as bytes.
type rawField struct {
	raw  []byte
	base int
}

func (b *builder) build() (*Vocab, error) {
	if len(bytes.TrimSpace(b.data)) == 0 {
		return nil, fmt.Errorf("%s is empty", b.src)
	}
	s := &scanner{data: b.data, src: b.src}
	fields := map[string]rawField{}
	if s.peek() != '{' {
		return nil, s.unexpected("at the start (tokenizer.json is a JSON object)")
	}
	s.pos++
	var key []byte
	for first := true; ; first = false {
		more, k, err := s.objectNext(first, key, "at the top level")
		if err != nil {
			return nil, err
		}
		key = k
		if !more {
			break
		}
		raw, base, err := s.raw()
		if err != nil {
			return nil, err
		}
		switch string(key) {
		case "model", "added_tokens", "decoder", "normalizer", "pre_tokenizer":
			fields[string(key)] = rawField{raw, base}
		}
	}
	if s.peek() != 0 {
		return nil, s.unexpected("after the top-level object")
	}

	model, ok := fields["model"]
	if !ok || isNull(model.raw) {
		return nil, fmt.Errorf("%s: model is missing", b.src)
	}
	if err := b.parseModel(model); err != nil {
		return nil, err
	}
	if err := b.parseAdded(fields["added_tokens"]); err != nil {
		return nil, err
	}
	pre := fields["pre_tokenizer"]
	norm := fields["normalizer"]
	byteLevelPre, prependPre, err := b.scanPrepend(pre, "pre_tokenizer", 0)
	if err != nil {
		return nil, err
	}
	_, prependNorm, err := b.scanPrepend(norm, "normalizer", 0)
	if err != nil {
		return nil, err
	}
	dec := fields["decoder"]
	p, err := b.parseDecoder(dec.raw, dec.base, byteLevelPre)
	if err != nil {
		return nil, err
	}
	if err := b.assemble(p); err != nil {
		return nil, err
	}
	b.v.prependsSpace = prependPre || prependNorm
	if err := b.endOfGeneration(); err != nil {
		return nil, err
	}
	return b.v, nil
}

// parseModel reads model.type and model.vocab, skipping the rest (merges) unbuilt.
func (b *builder) parseModel(f rawField) error {
	s := &scanner{data: b.data, pos: f.base, src: b.src}
	if s.peek() != '{' {
		return fmt.Errorf("%s: model must be an object (at byte offset %d)", b.src, f.base)
	}
	s.pos++
	vocabPos, hasMerges := -1, false
	var key []byte
	for first := true; ; first = false {
		more, k, err := s.objectNext(first, key, "in model")
		if err != nil {
			return err
		}
		key = k
		if !more {
			break
		}
		switch string(key) {
		case "type":
			start := s.pos
			t, err := s.appendString(nil)
			if err != nil {
				return fmt.Errorf("%s: model.type must be a string (at byte offset %d)", b.src, start)
			}
			b.modelType = string(t)
		case "vocab":
			s.skipWS()
			vocabPos = s.pos
			if err := s.skipValue(); err != nil {
				return err
			}
		case "merges":
			hasMerges = true
			if err := s.skipValue(); err != nil {
				return err
			}
		default:
			if err := s.skipValue(); err != nil {
				return err
			}
		}
	}
	if vocabPos < 0 {
		return fmt.Errorf("%s: model.vocab is missing", b.src)
	}
	vs := &scanner{data: b.data, pos: vocabPos, src: b.src}
	if b.modelType == "" { // untagged, as Hugging Face allows: infer from the fields
		switch {
		case vs.peek() == '[':
			b.modelType = "Unigram"
		case hasMerges:
			b.modelType = "BPE"
		default:
			return fmt.Errorf("%s: model.type is missing and cannot be inferred", b.src)
		}
	}
	switch b.modelType {
	case "BPE", "WordPiece", "WordLevel":
		if vs.peek() != '{' {
			return fmt.Errorf("%s: model.vocab must be an object of piece: id for model.type %q (at byte offset %d)", b.src, b.modelType, vocabPos)
		}
		return b.parseVocabObject(vs)
	case "Unigram":
		if vs.peek() != '[' {
			return fmt.Errorf("%s: model.vocab must be a list of [piece, score] for model.type \"Unigram\" (at byte offset %d)", b.src, vocabPos)
		}
		return b.parseVocabList(vs)
	}
	return fmt.Errorf("%s: model.type %q is not supported (want BPE, Unigram, WordPiece or WordLevel)", b.src, b.modelType)
}

// parseVocabObject reads {"piece": id, ...} straight into b.raw and b.entries.
func (b *builder) parseVocabObject(s *scanner) error {
	s.pos++ // {
	b.raw = make([]byte, 0, len(b.data)/8)
	for first := true; ; first = false {
		c := s.peek()
		if c == '}' {
			s.pos++
			break
		}
		if !first {
			if c != ',' {
				return s.unexpected("after a member of model.vocab")
			}
			s.pos++
		}
		off := len(b.raw)
		var err error
		if b.raw, err = s.appendString(b.raw); err != nil {
			return err
		}
		if err := s.expect(':', "in model.vocab"); err != nil {
			return err
		}
		piece := b.raw[off:]
		id, err := s.integer(maxTokens-1, func() string { return fmt.Sprintf("model.vocab[%q]", piece) })
		if err != nil {
			return err
		}
		b.entries = append(b.entries, entry{id: uint32(id), off: uint32(off), n: uint32(len(piece))})
	}
	b.nModel = len(b.entries)
	return nil
}

// parseVocabList reads Unigram's [["piece", score], ...]: ids are positions.
func (b *builder) parseVocabList(s *scanner) error {
	s.pos++ // [
	for first := true; ; first = false {
		more, err := s.arrayNext(first, "in model.vocab")
		if err != nil {
			return err
		}
		if !more {
			break
		}
		i := len(b.entries)
		if i >= maxTokens {
			return fmt.Errorf("%s: model.vocab has more than %d entries", b.src, maxTokens)
		}
		if err := s.expect('[', "in model.vocab (an entry is [piece, score])"); err != nil {
			return err
		}
		off := len(b.raw)
		if b.raw, err = s.appendString(b.raw); err != nil {
			return err
		}
		if err := s.expect(',', "in a model.vocab entry"); err != nil {
			return err
		}
		if _, err := s.number(); err != nil {
			return err
		}
		if err := s.expect(']', "closing a model.vocab entry"); err != nil {
			return err
		}
		b.entries = append(b.entries, entry{id: uint32(i), off: uint32(off), n: uint32(len(b.raw) - off)})
	}
	b.nModel = len(b.entries)
	return nil
}

// addedToken is one element of added_tokens.
type addedToken struct {
	ID      *int64  `json:"id"`
	Content *string `json:"content"`
	Special bool    `json:"special"`
}

func (b *builder) parseAdded(f rawField) error {
	if isNull(f.raw) {
		return nil
	}
	var added []addedToken
	if err := json.Unmarshal(f.raw, &added); err != nil {
		return b.fieldError("added_tokens", f.base, err)
	}
	for i, a := range added {
		switch {
		case a.ID == nil:
			return fmt.Errorf("%s: added_tokens[%d]: id is missing", b.src, i)
		case *a.ID < 0 || *a.ID >= maxTokens:
			return fmt.Errorf("%s: added_tokens[%d]: id %d is not in 0..%d", b.src, i, *a.ID, maxTokens-1)
		case a.Content == nil || *a.Content == "":
			return fmt.Errorf("%s: added_tokens[%d] (id %d): content is missing or empty", b.src, i, *a.ID)
		}
		off := len(b.raw)
		b.raw = append(b.raw, *a.Content...)
		b.entries = append(b.entries, entry{id: uint32(*a.ID), off: uint32(off), n: uint32(len(*a.Content)), special: a.Special})
	}
	return nil
}

// prependSpec holds the normalizer and pre-tokenizer fields that decide whether
// encoding puts a space before the text.
type prependSpec struct {
	Type           string            `json:"type"`
	Normalizers    []json.RawMessage `json:"normalizers"`
	Pretokenizers  []json.RawMessage `json:"pretokenizers"`
	Prepend        *string           `json:"prepend"`
	AddPrefixSpace *bool             `json:"add_prefix_space"`
	PrependScheme  *string           `json:"prepend_scheme"`
}

// scanPrepend walks a normalizer or pre-tokenizer (and its Sequence members) and
// reports whether it is byte-level and whether it prepends a space.
func (b *builder) scanPrepend(f rawField, path string, depth int) (byteLevel, prepend bool, err error) {
	if isNull(f.raw) {
		return false, false, nil
	}
	if depth > 8 {
		return false, false, fmt.Errorf("%s: %s: nested too deeply", b.src, path)
	}
	var p prependSpec
	if err := json.Unmarshal(f.raw, &p); err != nil {
		return false, false, b.fieldError(path, f.base, err)
	}
	switch p.Type {
	case "ByteLevel":
		return true, p.AddPrefixSpace != nil && *p.AddPrefixSpace, nil
	case "Metaspace":
		return false, prependsFirst(p.PrependScheme, p.AddPrefixSpace), nil
	case "Prepend":
		return false, p.Prepend != nil && *p.Prepend != "", nil
	}
	subs, name := p.Normalizers, "normalizers"
	if subs == nil {
		subs, name = p.Pretokenizers, "pretokenizers"
	}
	for i, sub := range subs {
		bl, pr, err := b.scanPrepend(rawField{sub, f.base}, fmt.Sprintf("%s.%s[%d]", path, name, i), depth+1)
		if err != nil {
			return false, false, err
		}
		byteLevel = byteLevel || bl
		prepend = prepend || pr
	}
	return byteLevel, prepend, nil
}

// assemble lays the tokens out by id and converts every piece to its bytes.
func (b *builder) assemble(p *pipeline) error {
	if len(b.entries) == 0 {
		return fmt.Errorf("%s: model.vocab and added_tokens define no tokens", b.src)
	}
	size := 0
	for _, e := range b.entries {
		size = max(size, int(e.id)+1)
	}
	// A sparse id space would make every per-id table huge for nothing.
	if size > 4*len(b.entries)+4096 {
		return fmt.Errorf("%s: token ids are sparse: the largest is %d but only %d tokens are defined", b.src, size-1, len(b.entries))
	}
	if len(b.raw) >= 1<<32-1 {
		return fmt.Errorf("%s: token pieces are too large", b.src)
	}
	v := &Vocab{size: size, kind: p.kind, leadingSpace: p.leadingSpace}
	v.rawOffs = make([]uint32, size)
	v.rawLens = make([]uint32, size)
	v.flags = make([]uint8, size)
	for i := range v.flags {
		v.flags[i] = flagGap
	}
	for i, e := range b.entries {
		f := v.flags[e.id]
		if i < b.nModel {
			if f&flagGap == 0 {
				return fmt.Errorf("%s: model.vocab gives id %d to both %q and %q", b.src, e.id, v.pieceOf(b.raw, int(e.id)), b.raw[e.off:e.off+e.n])
			}
			f = 0
		} else {
			if f&flagAdded != 0 {
				return fmt.Errorf("%s: added_tokens gives id %d to both %q and %q", b.src, e.id, v.pieceOf(b.raw, int(e.id)), b.raw[e.off:e.off+e.n])
			}
			f = flagAdded // an added token overrides the model's piece, as in Hugging Face
			if e.special {
				f |= flagSpecial
			}
		}
		v.flags[e.id] = f
		v.rawOffs[e.id], v.rawLens[e.id] = e.off, e.n
	}

	v.offs = make([]uint32, size+1)
	v.arena = make([]byte, 0, len(b.raw)+size)
	var scratch [2][]byte
	for id := 0; id < size; id++ {
		if v.flags[id]&(flagSpecial|flagGap) == 0 {
			v.arena = p.appendToken(v.arena, v.pieceOf(b.raw, id), &scratch)
			if len(v.arena) >= 1<<32-1 {
				return fmt.Errorf("%s: token bytes are too large", b.src)
			}
		} else if v.flags[id]&flagSpecial != 0 {
			v.special = append(v.special, id)
		}
		v.offs[id+1] = uint32(len(v.arena))
	}
	v.arena = slices.Clip(v.arena)
	v.raw = string(b.raw)
	v.modelSize = size
	b.v = v
	return nil
}

// pieceOf is the piece of id while b.raw is still a byte slice.
func (v *Vocab) pieceOf(raw []byte, id int) []byte {
	o := v.rawOffs[id]
	return raw[o : o+v.rawLens[id]]
}
