package vocab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Kind is how a tokenizer's decoder turns token pieces into text.
type Kind uint8

const (
	// KindByteLevel is byte-level BPE (GPT-2, Llama-3, Qwen): each byte is written as
	// a printable character through GPT-2's bytes_to_unicode table.
	KindByteLevel Kind = iota + 1
	// KindSentencePiece is SentencePiece style (Llama-2, Gemma, T5): "▁" stands for a
	// space, and with byte fallback a piece "<0xNN>" is the single byte NN.
	KindSentencePiece
	// KindWordPiece is BERT-style WordPiece: a piece starting with the continuation
	// prefix ("##") continues a word, any other piece starts one after a space.
	KindWordPiece
	// KindPlain is a vocabulary whose pieces are their text, with no byte mapping.
	KindPlain
)

// String names the kind: "byte-level", "sentencepiece", "wordpiece" or "plain".
func (k Kind) String() string {
	switch k {
	case KindByteLevel:
		return "byte-level"
	case KindSentencePiece:
		return "sentencepiece"
	case KindWordPiece:
		return "wordpiece"
	case KindPlain:
		return "plain"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// stepKind is one per-token transformation of a Hugging Face decoder.
type stepKind uint8

const (
	stepReplace      stepKind = iota // replace every from with to
	stepByteFallback                 // "<0xNN>" -> byte NN
	stepByteLevel                    // bytes_to_unicode inverse
	stepStrip                        // per-token Strip (not after Fuse)
	stepWordPiece                    // strip the continuation prefix, or prepend a space
	stepJoinSpace                    // no decoder: Hugging Face joins pieces with spaces
)

type step struct {
	kind        stepKind
	from, to    []byte // stepReplace; from is the prefix for stepWordPiece, the char for stepStrip
	start, stop int    // stepStrip
}

// pipeline is a tokenizer.json decoder reduced to what one token contributes to the
// middle of a decoded sequence. Effects that only touch the start of a sequence (a
// Strip after Fuse, Metaspace's first-token rule, WordPiece's first token) are
// recorded in leadingSpace instead: the first token's leading space is not shown.
type pipeline struct {
	steps        []step
	kind         Kind
	leadingSpace bool
	fused        bool
}

// decoderSpec holds the fields of every decoder type we understand.
type decoderSpec struct {
	Type     string            `json:"type"`
	Decoders []json.RawMessage `json:"decoders"`
	Pattern  *struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	} `json:"pattern"`
	Content        *string `json:"content"`
	Start          int     `json:"start"`
	Stop           int     `json:"stop"`
	Prefix         *string `json:"prefix"`
	Replacement    *string `json:"replacement"`
	AddPrefixSpace *bool   `json:"add_prefix_space"`
	PrependScheme  *string `json:"prepend_scheme"`
}

// metaspace is the SentencePiece space marker, U+2581.
const metaspace = "\u2581"

// parseDecoder builds the pipeline for the decoder at field path (e.g. "decoder").
// raw is nil or "null" when the file has no decoder; byteLevelPre says whether the
// pre-tokenizer is byte-level (then a missing decoder still means byte-level pieces).
func (b *builder) parseDecoder(raw []byte, base int, byteLevelPre bool) (*pipeline, error) {
	p := &pipeline{}
	if isNull(raw) {
		if byteLevelPre {
			p.steps = append(p.steps, step{kind: stepByteLevel})
		} else {
			p.steps = append(p.steps, step{kind: stepJoinSpace})
			p.leadingSpace = true
		}
	} else if err := b.addDecoder(p, raw, base, "decoder", 0); err != nil {
		return nil, err
	}
	p.kind = KindPlain
	for _, s := range p.steps {
		switch {
		case s.kind == stepByteLevel:
			p.kind = KindByteLevel
		case s.kind == stepWordPiece && p.kind == KindPlain:
			p.kind = KindWordPiece
		case s.kind == stepReplace && string(s.from) == metaspace && p.kind == KindPlain:
			p.kind = KindSentencePiece
		case s.kind == stepByteFallback && p.kind == KindPlain:
			p.kind = KindSentencePiece
		}
	}
	return p, nil
}

func (b *builder) addDecoder(p *pipeline, raw []byte, base int, path string, depth int) error {
	if depth > 8 {
		return fmt.Errorf("%s: %s: decoders nested too deeply", b.src, path)
	}
	var d decoderSpec
	if err := unmarshalAt(raw, &d); err != nil {
		return b.fieldError(path, base, err)
	}
	unsupported := func(why string) error {
		return fmt.Errorf("%s: %s.type %q with model.type %q is not supported: %s",
			b.src, path, d.Type, b.modelType, why)
	}
	switch d.Type {
	case "Sequence":
		for i, sub := range d.Decoders {
			if err := b.addDecoder(p, sub, base, fmt.Sprintf("%s.decoders[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
	case "ByteLevel":
		p.steps = append(p.steps, step{kind: stepByteLevel})
	case "ByteFallback":
		p.steps = append(p.steps, step{kind: stepByteFallback})
	case "Fuse":
		p.fused = true
	case "Replace":
		if d.Pattern == nil || d.Pattern.String == nil || d.Content == nil {
			if d.Pattern != nil && d.Pattern.Regex != nil {
				return unsupported("a Regex pattern (only String patterns are)")
			}
			return fmt.Errorf("%s: %s: Replace needs pattern.String and content", b.src, path)
		}
		if *d.Pattern.String == "" {
			return fmt.Errorf("%s: %s.pattern.String is empty", b.src, path)
		}
		p.steps = append(p.steps, step{kind: stepReplace, from: []byte(*d.Pattern.String), to: []byte(*d.Content)})
	case "Strip":
		if d.Content == nil || utf8.RuneCountInString(*d.Content) != 1 {
			return fmt.Errorf("%s: %s.content must be one character for Strip", b.src, path)
		}
		if d.Start < 0 || d.Stop < 0 {
			return fmt.Errorf("%s: %s: Strip start and stop must not be negative", b.src, path)
		}
		if p.fused {
			// After Fuse the whole sequence is one string: only its start and end change.
			if d.Stop > 0 {
				return unsupported("stripping the end of a decoded sequence")
			}
			if d.Start > 0 {
				if *d.Content != " " {
					return unsupported(fmt.Sprintf("stripping %q from the start of a sequence", *d.Content))
				}
				p.leadingSpace = true
			}
			return nil
		}
		p.steps = append(p.steps, step{kind: stepStrip, from: []byte(*d.Content), start: d.Start, stop: d.Stop})
	case "Metaspace":
		repl := metaspace
		if d.Replacement != nil {
			repl = *d.Replacement
		}
		if repl == "" {
			return fmt.Errorf("%s: %s.replacement is empty", b.src, path)
		}
		p.steps = append(p.steps, step{kind: stepReplace, from: []byte(repl), to: []byte(" ")})
		if prependsFirst(d.PrependScheme, d.AddPrefixSpace) {
			p.leadingSpace = true
		}
	case "WordPiece":
		prefix := "##"
		if d.Prefix != nil {
			prefix = *d.Prefix
		}
		p.steps = append(p.steps, step{kind: stepWordPiece, from: []byte(prefix)})
		p.leadingSpace = true
	case "":
		return fmt.Errorf("%s: %s.type is missing", b.src, path)
	case "BPEDecoder", "CTC":
		return unsupported("its pieces do not map to text one token at a time")
	default:
		return unsupported("unknown decoder")
	}
	return nil
}

// prependsFirst reads Metaspace's prepend_scheme ("always", "first", "never") or the
// older add_prefix_space flag; the default is "always".
func prependsFirst(scheme *string, addPrefix *bool) bool {
	if scheme != nil {
		return *scheme != "never"
	}
	if addPrefix != nil {
		return *addPrefix
	}
	return true
}

// appendToken appends the bytes of piece after the pipeline's steps to dst. scratch
// holds two reusable buffers so that no token allocates.
func (p *pipeline) appendToken(dst, piece []byte, scratch *[2][]byte) []byte {
	cur := piece
	for i, s := range p.steps {
		buf := scratch[i&1][:0]
		switch s.kind {
		case stepReplace:
			buf = appendReplace(buf, cur, s.from, s.to)
		case stepByteFallback:
			if b, ok := fallbackByte(cur); ok {
				buf = append(buf, b)
			} else {
				buf = append(buf, cur...)
			}
		case stepByteLevel:
			buf = appendByteLevel(buf, cur)
		case stepStrip:
			buf = appendStrip(buf, cur, s.from, s.start, s.stop)
		case stepWordPiece:
			if bytes.HasPrefix(cur, s.from) {
				buf = append(buf, cur[len(s.from):]...)
			} else {
				buf = append(append(buf, ' '), cur...)
			}
		case stepJoinSpace:
			buf = append(append(buf, ' '), cur...)
		}
		scratch[i&1] = buf
		cur = buf
	}
	return append(dst, cur...)
}

func appendReplace(dst, s, from, to []byte) []byte {
	for {
		i := bytes.Index(s, from)
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(append(dst, s[:i]...), to...)
		s = s[i+len(from):]
	}
}

// fallbackByte recognizes a byte-fallback piece "<0xNN>" as Hugging Face's
// ByteFallback decoder does (exactly six bytes, hex digits of either case).
func fallbackByte(p []byte) (byte, bool) {
	if len(p) != 6 || p[0] != '<' || p[1] != '0' || p[2] != 'x' || p[5] != '>' {
		return 0, false
	}
	hi, ok1 := hexDigit(p[3])
	lo, ok2 := hexDigit(p[4])
	return hi<<4 | lo, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// appendStrip removes up to start leading and stop trailing copies of the character ch.
func appendStrip(dst, s, ch []byte, start, stop int) []byte {
	for i := 0; i < start && bytes.HasPrefix(s, ch); i++ {
		s = s[len(ch):]
	}
	for i := 0; i < stop && bytes.HasSuffix(s, ch); i++ {
		s = s[:len(s)-len(ch)]
	}
	return append(dst, s...)
}

// byteLevelInverse maps a rune of GPT-2's bytes_to_unicode table back to its byte,
// or -1. The table sends the printable bytes 33..126, 161..172 and 174..255 to the
// same code point and the other 68 bytes, in order, to U+0100..U+0143.
var byteLevelInverse = func() (t [0x144]int16) {
	for i := range t {
		t[i] = -1
	}
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174 {
			t[b] = int16(b)
		} else {
			t[256+n] = int16(b)
			n++
		}
	}
	return t
}()

// appendByteLevel decodes a byte-level piece. As in Hugging Face's ByteLevel decoder,
// a piece with any character outside the table is taken as its raw UTF-8 bytes.
func appendByteLevel(dst, piece []byte) []byte {
	start := len(dst)
	for i := 0; i < len(piece); {
		c := piece[i]
		if c < utf8.RuneSelf {
			if c < 33 || c > 126 {
				return append(dst[:start], piece...)
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(piece[i:])
		if r >= rune(len(byteLevelInverse)) || byteLevelInverse[r] < 0 {
			return append(dst[:start], piece...)
		}
		dst = append(dst, byte(byteLevelInverse[r]))
		i += n
	}
	return dst
}
