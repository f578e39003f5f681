package vocab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// knownEOG are end-of-turn and end-of-text tokens of common chat models. Each joins
// the end-of-generation set when the tokenizer has it as a special added token (a
// plain piece with the same text is ordinary text and stays out).
var knownEOG = []string{
	"<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", // Llama-3
	"<|im_end|>", "<|endoftext|>", // Qwen, GPT-2
	"<end_of_turn>", "<eos>", // Gemma
	"</s>", // Llama-2, Mistral
}

// findAdded returns the id of the added token whose content is text.
func (v *Vocab) findAdded(text string) (int, bool) {
	for id := range v.size {
		if v.flags[id]&flagAdded != 0 && v.piece(id) == text {
			return id, true
		}
	}
	return 0, false
}

// find returns the id of the token written text: added tokens first, then the model's
// pieces, as TokenID does, but without building TokenID's index.
func (v *Vocab) find(text string) (int, bool) {
	if id, ok := v.findAdded(text); ok {
		return id, true
	}
	for id := range v.size {
		if v.flags[id]&(flagGap|flagAdded) == 0 && v.piece(id) == text {
			return id, true
		}
	}
	return 0, false
}

// endOfGeneration works out the model size and the end-of-generation set from the
// config files, the known end-of-turn tokens and the overrides.
func (b *builder) endOfGeneration() error {
	v, c := b.v, b.cfg
	eog := map[int]bool{}
	addID := func(id int64, where string) error {
		if id < 0 || id >= int64(v.size) {
			return fmt.Errorf("%s: token id %d is outside the tokenizer's ids 0..%d", where, id, v.size-1)
		}
		eog[int(id)] = true
		return nil
	}

	if c.tokenizerConfig != nil {
		var tc struct {
			EOS json.RawMessage `json:"eos_token"`
		}
		if err := json.Unmarshal(c.tokenizerConfig, &tc); err != nil {
			return configError("tokenizer_config.json", err)
		}
		if !isNull(tc.EOS) {
			var text string
			if err := json.Unmarshal(tc.EOS, &text); err != nil {
				var obj struct {
					Content *string `json:"content"`
				}
				if err := json.Unmarshal(tc.EOS, &obj); err != nil || obj.Content == nil {
					return fmt.Errorf("tokenizer_config.json: eos_token must be a string or {\"content\": string}, not %s", truncate(tc.EOS))
				}
				text = *obj.Content
			}
			id, ok := v.find(text)
			if !ok {
				return fmt.Errorf("tokenizer_config.json: eos_token %q is not a token of %s", text, b.src)
			}
			eog[id] = true
		}
	}

	modelSize := 0
	for _, f := range []struct {
		name string
		data []byte
	}{{"generation_config.json", c.generationConfig}, {"config.json", c.modelConfig}} {
		if f.data == nil {
			continue
		}
		var mc struct {
			EOS        json.RawMessage `json:"eos_token_id"`
			VocabSize  *int64          `json:"vocab_size"`
			TextConfig *struct {
				EOS       json.RawMessage `json:"eos_token_id"`
				VocabSize *int64          `json:"vocab_size"`
			} `json:"text_config"`
		}
		if err := json.Unmarshal(f.data, &mc); err != nil {
			return configError(f.name, err)
		}
		eos, size := mc.EOS, mc.VocabSize
		if mc.TextConfig != nil {
			if isNull(eos) {
				eos = mc.TextConfig.EOS
			}
			if size == nil {
				size = mc.TextConfig.VocabSize
			}
		}
		if !isNull(eos) {
			var ids []int64
			var one int64
			if err := json.Unmarshal(eos, &one); err == nil {
				ids = []int64{one}
			} else if err := json.Unmarshal(eos, &ids); err != nil {
				return fmt.Errorf("%s: eos_token_id must be an id or a list of ids, not %s", f.name, truncate(eos))
			}
			for _, id := range ids {
				if err := addID(id, f.name+": eos_token_id"); err != nil {
					return err
				}
			}
		}
		if f.name == "config.json" && size != nil {
			if *size <= 0 || *size > maxTokens {
				return fmt.Errorf("config.json: vocab_size %d is not in 1..%d", *size, maxTokens)
			}
			modelSize = int(*size)
		}
	}

	if c.modelSize != 0 {
		modelSize = c.modelSize
		if modelSize < 0 || modelSize > maxTokens {
			return fmt.Errorf("model size %d is not in 1..%d", modelSize, maxTokens)
		}
	}
	switch {
	case modelSize == 0:
		v.modelSize = v.size
	case modelSize < v.size:
		return fmt.Errorf("model vocabulary size %d is smaller than the %d ids of %s", modelSize, v.size, b.src)
	default:
		v.modelSize = modelSize
	}

	for _, text := range knownEOG {
		if id, ok := v.findAdded(text); ok && v.flags[id]&flagSpecial != 0 {
			eog[id] = true
		}
	}

	if c.noDefaultEOG {
		clear(eog)
	}
	for _, text := range c.removeEOG {
		id, ok := v.find(text)
		if !ok {
			return fmt.Errorf("WithoutEOG: %q is not a token of %s", text, b.src)
		}
		delete(eog, id)
	}
	for _, id := range c.removeEOGIDs {
		delete(eog, id)
	}
	for _, text := range c.addEOG {
		id, ok := v.find(text)
		if !ok {
			return fmt.Errorf("WithEOG: %q is not a token of %s", text, b.src)
		}
		eog[id] = true
	}
	for _, id := range c.addEOGIDs {
		if err := addID(int64(id), "WithEOGIDs"); err != nil {
			return err
		}
	}

	for id := range eog {
		v.flags[id] |= flagEOG
		v.eog = append(v.eog, id)
	}
	slices.Sort(v.eog)
	return nil
}

// configError describes a config file that is not the JSON object it should be.
func configError(name string, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%s: invalid JSON at byte offset %d: %v", name, se.Offset, err)
	}
	return fmt.Errorf("%s: %v", name, err)
}

// truncate shortens a JSON value for an error message.
func truncate(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 60 {
		return string(raw[:60]) + "..."
	}
	return string(raw)
}
