// Package vocab reads a Hugging Face tokenizer.json and knows, for every token id,
// the exact bytes the token stands for in generated text, whether it is special (no
// text: BOS, <|eot_id|>, ...) and whether it ends generation.
//
// It owns:
//   - the token bytes of every id, kept in one flat arena (TokenBytes is O(1) and
//     allocation-free), derived from the model vocabulary and added_tokens through the
//     file's decoder: byte-level BPE (GPT-2's bytes_to_unicode table: Llama-3, Qwen),
//     SentencePiece style ("▁" is a space, "<0xNN>" byte-fallback pieces are byte NN:
//     Llama-2, Gemma), WordPiece ("##" continues a word) and plain vocabularies;
//   - which ids are special (special added tokens, gaps in the id space, and the
//     padding ids up to the model's vocabulary size);
//   - the end-of-generation set: tokenizer_config.json's eos_token,
//     generation_config.json's and config.json's eos_token_id, and the known
//     end-of-turn tokens (<|eot_id|>, <|im_end|>, <end_of_turn>, </s>, ...) that the
//     tokenizer has as special tokens, with options to change it;
//   - a process-wide cache: loading the same inputs again returns the same *Vocab.
//
// A Vocab is immutable and safe for concurrent use; *Vocab implements the grammar
// engine's Vocabulary interface (gocore/engine), which is how the engine sees it.
//
// Token bytes are what a token adds in the middle of a decoded sequence. The start of
// a sequence may differ: SentencePiece decoders drop the first token's leading space
// (LeadingSpace), and SentencePiece encoders put a "▁" before the text (PrependsSpace).
//
// It must not know about grammars, masks, tries or models, and it is pure Go: it
// never links the Rust tokenizers library (gocore/tokenizer), so that the engine
// builds and tests without cgo. Encoding and decoding text is gocore/tokenizer's job.
// It reads only the fields it needs and skips the rest of tokenizer.json (the merges
// list) without building it.
package vocab
