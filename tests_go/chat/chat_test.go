package chat_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tetherlm/tether/gocore/chat"
	"github.com/tetherlm/tether/tests_go/internal/testdata"
)

// modelDir writes files (name -> content) into a new directory.
func modelDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

func render(t *testing.T, src string, msgs []chat.Message, opts chat.Options) string {
	t.Helper()
	tm, err := chat.Compile(src)
	require.NoError(t, err)
	out, err := tm.Render(msgs, opts)
	require.NoError(t, err)
	return out
}

var hello = []chat.Message{{Role: "user", Content: "Hello"}}

// The real templates of the test tokenizers, against text transformers renders
// (tests_py/test_chat_template.py compares many more conversations).
func TestRealTemplates(t *testing.T) {
	msgs := []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi é"}}
	for _, tc := range []struct {
		name, want string
		special    []chat.Var
	}{
		{"llama3", "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi é<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
			[]chat.Var{{Name: "bos_token", Value: "<|begin_of_text|>"}, {Name: "eos_token", Value: "<|eot_id|>"}}},
		{"qwen3", "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi é<|im_end|>\n<|im_start|>assistant\n",
			[]chat.Var{{Name: "eos_token", Value: "<|im_end|>"}, {Name: "pad_token", Value: "<|endoftext|>"}}},
		{"gemma3", "<bos><start_of_turn>user\nBe brief.\n\nHi é<end_of_turn>\n<start_of_turn>model\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, err := chat.Load(filepath.Dir(testdata.TokenizerFile(t, tc.name, "tokenizer_config.json")))
			require.NoError(t, err)
			assert.Equal(t, []string{"default"}, ts.Names())
			if tc.special != nil {
				assert.Equal(t, tc.special, ts.SpecialTokens())
			}
			tm, err := ts.Select("", false)
			require.NoError(t, err)
			assert.Equal(t, "default", tm.Name)
			out, err := tm.Render(msgs, chat.Options{AddGenerationPrompt: true})
			require.NoError(t, err)
			assert.Equal(t, tc.want, out)
		})
	}
	// Qwen3's enable_thinking=false adds an empty think block.
	ts, err := chat.Load(filepath.Dir(testdata.TokenizerFile(t, "qwen3", "tokenizer_config.json")))
	require.NoError(t, err)
	tm, err := ts.Select("", false)
	require.NoError(t, err)
	out, err := tm.Render(hello, chat.Options{AddGenerationPrompt: true, Vars: map[string]any{"enable_thinking": false}})
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(out, "<|im_start|>assistant\n<think>\n\n</think>\n\n"), out)
}

func TestNoTemplate(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"empty dir":          {},
		"config without one": {"tokenizer_config.json": `{"bos_token": "<s>"}`},
		"null template":      {"tokenizer_config.json": `{"chat_template": null}`},
	} {
		t.Run(name, func(t *testing.T) {
			dir := modelDir(t, files)
			_, err := chat.Load(dir)
			require.Error(t, err)
			assert.True(t, errors.Is(err, chat.ErrNoTemplate), err)
			assert.Contains(t, err.Error(), dir)
			assert.Contains(t, err.Error(), "chat_template.jinja")
		})
	}
	// The real Llama-2 tokenizer has no template.
	_, err := chat.Load(filepath.Dir(testdata.TokenizerFile(t, "llama2", "tokenizer_config.json")))
	assert.ErrorIs(t, err, chat.ErrNoTemplate)
}

func TestBadConfigs(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{`{"chat_template": 3}`, "chat_template must be a string or a list"},
		{`{"chat_template": [{"name": "a"}]}`, "chat_template[0] must be an object with string fields name and template"},
		{`{"chat_template": [{"name": "a", "template": "x"}, "b"]}`, "chat_template[1] must be an object"},
		{`{"chat_template": "x", "bos_token": 5}`, "bos_token must be a string or {\"content\": string}, not 5"},
		{`{"chat_template": "x"`, "tokenizer_config.json: unexpected end of JSON input"},
	} {
		_, err := chat.Load(modelDir(t, map[string]string{"tokenizer_config.json": tc.config}))
		require.Error(t, err, tc.config)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestTemplateListingAndSelection(t *testing.T) {
	list := `{"chat_template": [{"name": "tool_use", "template": "T{{ tools | length }}"}, {"name": "default", "template": "D"}, {"name": "rag", "template": "R"}],
		"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>", "unk_token": null,
		"extra_special_tokens": {"image_token": "<img>"}}`
	ts, err := chat.Load(modelDir(t, map[string]string{"tokenizer_config.json": list}))
	require.NoError(t, err)
	assert.Equal(t, []string{"default", "rag", "tool_use"}, ts.Names())
	assert.Equal(t, []chat.Var{{Name: "bos_token", Value: "<s>"}, {Name: "eos_token", Value: "</s>"}, {Name: "image_token", Value: "<img>"}}, ts.SpecialTokens())

	pick := func(name string, tools bool) string {
		tm, err := ts.Select(name, tools)
		require.NoError(t, err)
		return tm.Name
	}
	assert.Equal(t, "default", pick("", false))
	assert.Equal(t, "tool_use", pick("", true), "tools choose tool_use, as transformers does")
	assert.Equal(t, "rag", pick("rag", true))
	_, err = ts.Select("chatml", false)
	assert.EqualError(t, err, `chat: the model has no chat template named "chatml" (it has default, rag, tool_use)`)

	tm, err := ts.Select("", true)
	require.NoError(t, err)
	out, err := tm.Render(hello, chat.Options{Tools: json.RawMessage(`[{"name": "a"}, {"name": "b"}]`)})
	require.NoError(t, err)
	assert.Equal(t, "T2", out)

	// Several templates and none named default: a name is needed.
	ts, err = chat.Load(modelDir(t, map[string]string{"tokenizer_config.json": `{"chat_template": [{"name": "a", "template": "A"}, {"name": "b", "template": "B"}]}`}))
	require.NoError(t, err)
	_, err = ts.Select("", false)
	assert.EqualError(t, err, "chat: the model has several chat templates and none is named default: choose one of a, b")
}

func TestTemplateFilesTakePriority(t *testing.T) {
	dir := modelDir(t, map[string]string{
		"tokenizer_config.json":                `{"chat_template": "from config", "bos_token": "<s>"}`,
		"chat_template.jinja":                  "{{ bos_token }}file\n",
		"additional_chat_templates/tool.jinja": "tool",
		"special_tokens_map.json":              `{"bos_token": "<ignored>", "eos_token": {"content": "</s>"}}`,
	})
	ts, err := chat.Load(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"default", "tool"}, ts.Names())
	assert.Equal(t, []chat.Var{{Name: "bos_token", Value: "<s>"}, {Name: "eos_token", Value: "</s>"}}, ts.SpecialTokens(),
		"special_tokens_map.json fills only what tokenizer_config.json lacks")
	tm, err := ts.Select("", false)
	require.NoError(t, err)
	out, err := tm.Render(hello, chat.Options{})
	require.NoError(t, err)
	assert.Equal(t, "<s>file", out, "the final newline is dropped, as Jinja2 does")
}

func TestParseMessages(t *testing.T) {
	msgs, err := chat.ParseMessages([]byte(`[{"role": "system", "content": "S"},
		{"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {}}}]},
		{"role": "user", "content": [{"type": "text", "text": "T"}]}]`))
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	assert.Equal(t, "system", msgs[0].Role)
	assert.Equal(t, "S", msgs[0].Content)
	assert.Equal(t, "assistant", msgs[1].Role)
	assert.NotNil(t, msgs[2].JSON)

	for _, tc := range []struct{ in, want string }{
		{`{"role": "user"}`, "messages: must be a JSON list of {\"role\", \"content\"} objects, not an object"},
		{`[]`, "messages: the list is empty"},
		{`[{"role": "user", "content": "a"}, 7]`, "messages[1]: must be an object with role and content, not a number"},
		{`[{"role": "user", "content": "a"}, {"content": "b"}]`, "messages[1]: has no role"},
		{`[{"role": 1, "content": "a"}]`, "messages[0]: role must be a string, not a number"},
		{`[{"role": "", "content": "a"}]`, "messages[0]: role is empty"},
		{`[{"role": "user"}]`, `messages[0]: (role "user") has no content`},
		{`[{"role": "user", "content": null}]`, `messages[0]: (role "user") has null content and no tool_calls`},
		{`[{"role": "user", "content": {"a": 1}}]`, `messages[0]: (role "user") content must be a string or a list of content parts, not an object`},
		{`[{"role": "user", "content": "a"},]`, "messages: invalid JSON at byte offset"},
		{`[{"role": "user", "content": "a"}] x`, "messages: invalid JSON"},
	} {
		_, err := chat.ParseMessages([]byte(tc.in))
		require.Error(t, err, tc.in)
		assert.Contains(t, err.Error(), tc.want, tc.in)
	}
}

func TestTemplateErrorsHaveLines(t *testing.T) {
	_, err := chat.Compile("line one\n{% if x %}\nno end")
	var te *chat.TemplateError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 2, te.Line)
	assert.Contains(t, err.Error(), "chat template, line 2: error parsing it")

	_, err = chat.Compile("a\n\nb {{ 'x' % y }}")
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 3, te.Line)
	assert.Contains(t, err.Error(), "% string formatting")

	// Whitespace control that removes lines does not move the line numbers.
	_, err = chat.Compile("{#- a\ncomment -#}\n\n  {%- if x -%}\n\n{% for %}")
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 6, te.Line, err.Error())

	tm, err := chat.Compile("{% for m in messages %}\n{% if m.role == 'user' and loop.index0 > 0 %}\n" +
		"{{ raise_exception('Only one user message, \\'please\\'') }}\n{% endif %}{% endfor %}")
	require.NoError(t, err)
	_, err = tm.Render([]chat.Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}, chat.Options{})
	require.ErrorAs(t, err, &te)
	assert.True(t, te.Raised)
	assert.Equal(t, 3, te.Line)
	assert.Equal(t, "chat template, line 3: the template raised an exception: Only one user message, 'please'", err.Error())
}

func TestRenderInputs(t *testing.T) {
	tm, err := chat.Compile("{{ messages | length }}")
	require.NoError(t, err)
	_, err = tm.Render(nil, chat.Options{})
	assert.EqualError(t, err, "chat: no messages to render")
	_, err = tm.Render([]chat.Message{{Content: "x"}}, chat.Options{})
	assert.EqualError(t, err, "chat: messages[0]: role is empty")
	_, err = tm.Render(hello, chat.Options{Vars: map[string]any{"messages": 1}})
	assert.EqualError(t, err, "chat: messages is set by the chat template renderer, not a variable to give")
	_, err = tm.Render(hello, chat.Options{Tools: json.RawMessage(`{"name": "f"}`)})
	assert.EqualError(t, err, "chat: tools must be a JSON list of objects, not an object")
	_, err = tm.Render(hello, chat.Options{Tools: json.RawMessage(`[{"name": "f"}, "g"]`)})
	assert.EqualError(t, err, "chat: tools[1] must be a JSON object, not a string")
	_, err = tm.Render(hello, chat.Options{Vars: map[string]any{"x": struct{}{}}})
	assert.ErrorContains(t, err, "chat: variable x: a struct {} cannot be a template variable")

	// Unset tools and documents are none; add_generation_prompt is a boolean; variables
	// take the place of special tokens.
	out := render(t, "{{ tools is none }} {{ documents is none }} {{ add_generation_prompt }} {{ bos_token }} {{ enable_thinking is defined }}",
		hello, chat.Options{})
	assert.Equal(t, "True True False  False", out, "Compile gives no special tokens")
	tm2, err := chat.Compile("{{ bos_token }}|{{ enable_thinking }}")
	require.NoError(t, err)
	tm2.Special = []chat.Var{{Name: "bos_token", Value: "<s>"}}
	out, err = tm2.Render(hello, chat.Options{Vars: map[string]any{"enable_thinking": true}})
	require.NoError(t, err)
	assert.Equal(t, "<s>|True", out)
	out, err = tm2.Render(hello, chat.Options{Vars: map[string]any{"bos_token": "<B>"}})
	require.NoError(t, err)
	assert.Equal(t, "<B>|", out)
}

// Messages reach the template as transformers prepares them: null fields dropped, the
// reasoning under its names, key order kept.
func TestMessagesAsTransformersPreparesThem(t *testing.T) {
	msgs, err := chat.ParseMessages([]byte(`[{"role": "user", "content": "q", "name": null},
		{"role": "assistant", "content": "a", "reasoning": "r", "z": 1.0, "b": [1, 2.5e-7, 1e16, true, null]}]`))
	require.NoError(t, err)
	out := render(t, "{% for m in messages %}{{ m | tojson }}\n{% endfor %}", msgs, chat.Options{})
	assert.Equal(t, `{"role": "user", "content": "q"}`+"\n"+
		`{"thinking": "r", "role": "assistant", "content": "a", "reasoning": "r", "z": 1.0, "b": [1, 2.5e-07, 1e+16, true, null], "reasoning_content": "r"}`+"\n", out)
}

// Workarounds for the template library, each checked against what Jinja2 renders.
func TestJinja2Semantics(t *testing.T) {
	msgs, err := chat.ParseMessages([]byte(`[{"role": "user", "content": "hi <b> & \u2028 x", "n": 21.5, "one": 1.0, "k": {"z": 1, "a": [1, null, "s'q\"d"]}}]`))
	require.NoError(t, err)
	for _, tc := range []struct{ src, want string }{
		{"{{ messages[0].k | tojson }}", `{"z": 1, "a": [1, null, "s'q\"d"]}`},
		{"{{ messages[0].k | tojson(indent=2) }}", "{\n  \"z\": 1,\n  \"a\": [\n    1,\n    null,\n    \"s'q\\\"d\"\n  ]\n}"},
		{"{{ messages[0].k | tojson(sort_keys=true) }}", `{"a": [1, null, "s'q\"d"], "z": 1}`},
		{"{{ messages[0].k | tojson(separators=(',', ':')) }}", `{"z":1,"a":[1,null,"s'q\"d"]}`},
		{"{{ messages[0].content | tojson }}", "\"hi <b> & \u2028 x\""},
		{"{{ messages[0].content | tojson(ensure_ascii=true) }}", `"hi <b> & \u2028 x"`},
		{"{{ {'a': 'é🦀'} | tojson(ensure_ascii=true) }}", `{"a": "\u00e9\ud83e\udd80"}`},
		{"{{ messages[0].k.a | list | tojson }}", `[1, null, "s'q\"d"]`},
		{"{{ '<' ~ messages[0].one | string ~ '>' }}", "<1.0>"},
		{"{{ messages[0].n }} {{ messages[0].one }} {{ none }} {{ messages[0].k.a }}", `21.5 1.0 None [1, None, 's\'q"d']`},
		{"{{ messages[0].k }}", `{'z': 1, 'a': [1, None, 's\'q"d']}`},
		// Whitespace control: "-" trims only the adjacent text.
		{"{%- if true -%}A: {{ 'x' }}{%- endif -%}", "A: x"},
		{"a  {%- if true -%}  b  {%- endif -%}  c", "abc"},
		{"{% if true %}\n  x\n{% endif %}\n  {% if true %}y{% endif %}\n", "  x\ny"},
		{"{{ 'v' }}   {% if true %}w{% endif %}", "v   w"},
		{"  {%+ if true %}x{% endif +%}\ny", "  x\ny"},
		{"{# c #}\n  {#- d -#}  e{% raw %} {{ not code }} {% endraw %}", "e {{ not code }} "},
		{"a\r\nb\rc\n", "a\nb\nc"},
		{`{{ 'tab\tnl\nq\'uni\u00e9\x41' }}`, "tab\tnl\nq'uniéA"},
		{"{{ {'a': {'b': 1}} | tojson }}", `{"a": {"b": 1}}`},
	} {
		assert.Equal(t, tc.want, render(t, tc.src, msgs, chat.Options{}), tc.src)
	}
}

func TestStrftimeNow(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 7, 4, 9, 5, 3, 0, time.UTC) }
	out := render(t, `{{ strftime_now("%d %b %Y") }}|{{ strftime_now("%A %B %-d, %H:%M:%S %p %j %y") }}`, hello, chat.Options{Now: now})
	assert.Equal(t, "04 Jul 2026|Saturday July 4, 09:05:03 AM 185 26", out)

	tm, err := chat.Compile(`{{ strftime_now("%Q") }}`)
	require.NoError(t, err)
	_, err = tm.Render(hello, chat.Options{Now: now})
	assert.ErrorContains(t, err, `strftime_now: format "%Q": directive %Q is not supported`)
}
