package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// ErrNoTemplate is wrapped by the error Load returns for a model directory that has no
// chat template.
var ErrNoTemplate = errors.New("no chat template")

// File names read by Load, as transformers names them.
const (
	TemplateFile        = "chat_template.jinja"       // the default template
	TemplateDir         = "additional_chat_templates" // named templates, NAME.jinja
	TokenizerConfigFile = "tokenizer_config.json"     // chat_template and the special tokens
	SpecialTokensFile   = "special_tokens_map.json"   // legacy special tokens
)

// specialTokenNames are transformers' named special tokens (SPECIAL_TOKENS_ATTRIBUTES),
// in its order; each one the tokenizer has is a template variable.
var specialTokenNames = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// Templates is the set of chat templates of a model: one unnamed template (named
// "default"), or several named ones (e.g. "default" and "tool_use"). It also holds the
// tokenizer's special tokens, which every template sees as variables.
type Templates struct {
	sources map[string]string
	names   []string // sorted
	special []Var
}

// Var is one template variable.
type Var struct {
	Name  string
	Value string
}

// Load reads the chat templates of a Hugging Face model directory as transformers'
// AutoTokenizer does: chat_template.jinja (the default template) and
// additional_chat_templates/NAME.jinja take the place of tokenizer_config.json's
// chat_template, which is a string or a list of {"name", "template"} objects. The special
// tokens (bos_token, eos_token, ...) come from tokenizer_config.json, completed by
// special_tokens_map.json where present. A directory without a template gives an error
// wrapping ErrNoTemplate.
func Load(dir string) (*Templates, error) {
	var t *Templates
	cfg, err := os.ReadFile(filepath.Join(dir, TokenizerConfigFile))
	switch {
	case err == nil:
		if t, err = FromTokenizerConfig(cfg); err != nil {
			return nil, err
		}
	case errors.Is(err, os.ErrNotExist):
		t = &Templates{sources: map[string]string{}}
	default:
		return nil, fmt.Errorf("chat: %w", err)
	}
	if err := t.addLegacySpecialTokens(filepath.Join(dir, SpecialTokensFile)); err != nil {
		return nil, err
	}

	files := map[string]string{}
	if data, err := os.ReadFile(filepath.Join(dir, TemplateFile)); err == nil {
		files["default"] = string(data)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("chat: %w", err)
	}
	extra, err := filepath.Glob(filepath.Join(dir, TemplateDir, "*.jinja"))
	if err != nil {
		return nil, fmt.Errorf("chat: %w", err)
	}
	for _, p := range extra {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("chat: %w", err)
		}
		files[strings.TrimSuffix(filepath.Base(p), ".jinja")] = string(data)
	}
	if len(files) > 0 {
		// Template files take priority over the templates in tokenizer_config.json.
		t.sources = files
		t.sortNames()
	}
	if len(t.sources) == 0 {
		return nil, fmt.Errorf("chat: %w in %s: neither %s nor a chat_template in %s (a base model may have none; give a raw --prompt instead)",
			ErrNoTemplate, dir, TemplateFile, TokenizerConfigFile)
	}
	return t, nil
}

// FromTokenizerConfig reads the chat templates and special tokens of a
// tokenizer_config.json. It has no templates (Names is empty) when the config has no
// chat_template.
func FromTokenizerConfig(data []byte) (*Templates, error) {
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("chat: %s: %v", TokenizerConfigFile, err)
	}
	t := &Templates{sources: map[string]string{}}
	if raw, ok := cfg["chat_template"]; ok && !isNull(raw) {
		var one string
		var list []json.RawMessage
		switch {
		case json.Unmarshal(raw, &one) == nil:
			t.sources["default"] = one
		case json.Unmarshal(raw, &list) == nil:
			for i, item := range list {
				var e struct {
					Name     *string `json:"name"`
					Template *string `json:"template"`
				}
				if err := json.Unmarshal(item, &e); err != nil || e.Name == nil || e.Template == nil {
					return nil, fmt.Errorf("chat: %s: chat_template[%d] must be an object with string fields name and template", TokenizerConfigFile, i)
				}
				t.sources[*e.Name] = *e.Template
			}
		default:
			return nil, fmt.Errorf("chat: %s: chat_template must be a string or a list of {\"name\", \"template\"} objects, not %s", TokenizerConfigFile, short(raw))
		}
	}
	t.sortNames()
	for _, name := range specialTokenNames {
		if raw, ok := cfg[name]; ok {
			tok, present, err := tokenText(raw)
			if err != nil {
				return nil, fmt.Errorf("chat: %s: %s %v", TokenizerConfigFile, name, err)
			}
			if present {
				t.special = append(t.special, Var{name, tok})
			}
		}
	}
	// Model-specific named tokens (Gemma 3's boi_token, ...), which transformers adds to
	// its special tokens map.
	if raw, ok := cfg["extra_special_tokens"]; ok {
		var named map[string]json.RawMessage
		if json.Unmarshal(raw, &named) == nil {
			names := make([]string, 0, len(named))
			for n := range named {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				if tok, present, err := tokenText(named[n]); err == nil && present && !t.hasSpecial(n) {
					t.special = append(t.special, Var{n, tok})
				}
			}
		}
	}
	return t, nil
}

// addLegacySpecialTokens fills the named special tokens that tokenizer_config.json does
// not give from special_tokens_map.json, if the directory has one.
func (t *Templates) addLegacySpecialTokens(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("chat: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("chat: %s: %v", SpecialTokensFile, err)
	}
	for _, name := range specialTokenNames {
		if raw, ok := m[name]; ok && !t.hasSpecial(name) {
			tok, present, err := tokenText(raw)
			if err != nil {
				return fmt.Errorf("chat: %s: %s %v", SpecialTokensFile, name, err)
			}
			if present {
				t.special = append(t.special, Var{name, tok})
			}
		}
	}
	return nil
}

func (t *Templates) hasSpecial(name string) bool {
	for _, v := range t.special {
		if v.Name == name {
			return true
		}
	}
	return false
}

func (t *Templates) sortNames() {
	t.names = t.names[:0]
	for n := range t.sources {
		t.names = append(t.names, n)
	}
	sort.Strings(t.names)
}

// Names lists the template names, sorted. A model with a single template has one,
// "default".
func (t *Templates) Names() []string { return append([]string(nil), t.names...) }

// Source returns the text of the named template.
func (t *Templates) Source(name string) (string, bool) {
	s, ok := t.sources[name]
	return s, ok
}

// SpecialTokens returns the special-token variables every template of the set sees
// (bos_token, eos_token, ...), in transformers' order.
func (t *Templates) SpecialTokens() []Var { return append([]Var(nil), t.special...) }

// Select compiles the template to use, chosen as transformers' get_chat_template does:
// the one called name if name is not empty; otherwise "tool_use" when the conversation
// has tools and the model has such a template, else "default". A model with several
// templates and no "default" needs a name.
func (t *Templates) Select(name string, tools bool) (*Template, error) {
	if len(t.names) == 0 {
		return nil, fmt.Errorf("chat: %w", ErrNoTemplate)
	}
	if name == "" {
		if _, ok := t.sources["tool_use"]; ok && tools {
			name = "tool_use"
		} else {
			name = "default"
		}
		if _, ok := t.sources[name]; !ok {
			return nil, fmt.Errorf("chat: the model has several chat templates and none is named default: choose one of %s", strings.Join(t.names, ", "))
		}
	}
	src, ok := t.sources[name]
	if !ok {
		return nil, fmt.Errorf("chat: the model has no chat template named %q (it has %s)", name, strings.Join(t.names, ", "))
	}
	tm, err := Compile(src)
	if err != nil {
		return nil, err
	}
	tm.Name = name
	tm.Special = t.SpecialTokens()
	return tm, nil
}

// Template is one compiled chat template. Render may be called concurrently.
type Template struct {
	Name    string // "default", "tool_use", ... ("" for one made by Compile)
	Source  string // the Jinja text
	Special []Var  // special-token variables (bos_token, eos_token, ...) given to every Render
	jt      *jinja.Template
}

// Compile parses a chat template. Syntax errors are a *TemplateError with the line.
//
// The text is rewritten before it is compiled so that tojson and printed values follow
// Python (see rewrite.go); line numbers do not change. A template that formats strings
// with Python's % operator is refused: the library would render it wrongly.
func Compile(source string) (*Template, error) {
	rw, err := rewrite(source)
	if err != nil {
		return nil, templateError(err, "parsing", source)
	}
	if rw.percentLine > 0 {
		return nil, &TemplateError{Line: rw.percentLine, Stage: "parsing",
			Msg: "Python's % string formatting ('...' % x) is not supported by the Go template library"}
	}
	jt, err := jinja.Compile(rw.text)
	if err != nil {
		te := templateError(err, "parsing", source)
		if te.Line == 0 && strings.HasPrefix(te.Msg, "unclosed") {
			te.Line = rw.unclosedLine
		}
		return nil, te
	}
	return &Template{Source: source, jt: jt}, nil
}

// TemplateError is an error in a chat template: a syntax error found by Compile, an
// error while rendering, or an exception the template raised (raise_exception, e.g.
// "Conversation roles must alternate user/assistant/user/assistant/...").
type TemplateError struct {
	Line   int    // 1-based line of the template, 0 when not known
	Raised bool   // the template called raise_exception with Msg
	Msg    string // what went wrong
	Stage  string // "parsing" or "rendering"
}

func (e *TemplateError) Error() string {
	var b strings.Builder
	b.WriteString("chat template")
	if e.Line > 0 {
		fmt.Fprintf(&b, ", line %d", e.Line)
	}
	switch {
	case e.Raised:
		b.WriteString(": the template raised an exception: ")
	default:
		fmt.Fprintf(&b, ": error %s it: ", e.Stage)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// lineRE finds the line number in the template library's parse errors.
var lineRE = regexp.MustCompile(`\bline (\d+): `)

// templateError turns a template library error into a *TemplateError, moving the line
// number it names into Line.
func templateError(err error, stage, source string) *TemplateError {
	msg := err.Error()
	for _, p := range []string{"jinja scan: ", "jinja parse: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	te := &TemplateError{Msg: msg, Stage: stage}
	if m := lineRE.FindStringSubmatchIndex(msg); m != nil {
		te.Line, _ = strconv.Atoi(msg[m[2]:m[3]])
		te.Msg = msg[:m[0]] + msg[m[1]:]
	}
	return te
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// tokenText reads a special token written as a string or as {"content": string}.
func tokenText(raw json.RawMessage) (text string, present bool, err error) {
	if isNull(raw) {
		return "", false, nil
	}
	if json.Unmarshal(raw, &text) == nil {
		return text, true, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Content != nil {
		return *obj.Content, true, nil
	}
	return "", false, fmt.Errorf("must be a string or {\"content\": string}, not %s", short(raw))
}

// short shortens a JSON value for an error message.
func short(raw []byte) string {
	s := strings.TrimSpace(string(raw))
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
