package engine

// Vocabulary is what the engine needs to know about a tokenizer: the exact bytes of
// every token and which tokens are special or end generation. gocore/vocab loads one
// from a Hugging Face tokenizer.json; tests may build their own. The engine never
// reads tokenizer files itself.
//
// Implementations must be safe for concurrent reads and must not change after they
// are handed to the engine (the engine caches per-vocabulary data, e.g. its token trie).
type Vocabulary interface {
	// Size is the number of token ids the tokenizer defines (ids 0..Size()-1).
	// A model's vocabulary may be larger (padding ids); masks take their width
	// from the bitset they fill, and ids >= Size() are always masked.
	Size() int
	// TokenBytes is the exact byte string a token stands for in generated text; it
	// may end inside a UTF-8 character (byte-fallback and byte-level pieces). It is
	// empty for special tokens that have no text. The caller must not modify it.
	TokenBytes(id int) []byte
	// IsSpecial reports a control token (BOS, <|eot_id|>, ...): it has no text and can
	// only be produced where a grammar names it (token references).
	IsSpecial(id int) bool
	// IsEOG reports a token that ends generation (EOS, <|eot_id|>, <|im_end|>, ...).
	// The engine allows these exactly when the grammar can end.
	IsEOG(id int) bool
	// TokenID finds a token by its text as written in the tokenizer (e.g. "<|eot_id|>"),
	// for named token references in grammars.
	TokenID(text string) (int, bool)
}
