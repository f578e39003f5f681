// Package chat renders a model's chat template: the Jinja template in a Hugging Face
// model directory that turns a conversation into the prompt text the model was trained
// on, exactly as transformers' tokenizer.apply_chat_template(..., tokenize=False) does.
//
//	ts, err := chat.Load(dir)                  // tokenizer_config.json, chat_template.jinja
//	tm, err := ts.Select("", false)            // the default template
//	prompt, err := tm.Render([]chat.Message{
//		{Role: "system", Content: "Answer in JSON."},
//		{Role: "user", Content: "Name a colour."},
//	}, chat.Options{AddGenerationPrompt: true, Vars: map[string]any{"enable_thinking": false}})
//
// Encode the prompt without adding special tokens: the template writes them (BOS
// included), and transformers encodes it with add_special_tokens=False.
//
// Load reads the templates where transformers does: chat_template.jinja and
// additional_chat_templates/NAME.jinja, else tokenizer_config.json's chat_template (a
// string, or a list of {"name", "template"} objects); Select picks one as
// get_chat_template does ("tool_use" when there are tools, else "default"). The template
// sees transformers' variables: the tokenizer's named special tokens (bos_token,
// eos_token, unk_token, sep_token, pad_token, cls_token, mask_token, and
// extra_special_tokens given by name), Options.Vars (enable_thinking, ...), messages
// (null fields dropped, reasoning aliased to "thinking" and "reasoning_content"), tools,
// documents and add_generation_prompt; and its functions raise_exception and
// strftime_now.
//
// Templates run on github.com/ardanlabs/jinja (v1.8.0), a Jinja engine written for chat
// templates. Where it differs from Jinja2 in ways chat templates meet (whitespace
// control, the final newline, tojson, printing None and floats, string escapes),
// Compile rewrites the template first; see rewrite.go for the list. Known differences
// that remain: "~" concatenation and filters other than tojson and string turn None and
// floats into text the library's way (None as "", 1.0 as "1"); ** on integers gives a
// float; operations on an undefined value that Jinja2 refuses (e.g. "'x' in
// message.content" for a message without content) render instead of failing;
// special-token defaults that a transformers tokenizer class adds by itself (Gemma's
// mask_token) are not known; Python's % string formatting is refused with an error.
package chat
