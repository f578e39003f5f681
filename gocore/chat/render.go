package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string // "system", "user", "assistant", "tool", ...
	Content string
	// JSON, when not nil, is the whole message as a JSON object and is used instead of
	// Role and Content: for content given as a list of parts, tool_calls,
	// reasoning_content and the other fields templates read. ParseMessages fills it.
	JSON json.RawMessage
}

// ParseMessages reads a JSON list of messages, each an object with a string "role" and
// a "content" that is a string, a list of content parts or null (it may be left out of
// a message with "tool_calls"). Other fields are kept for the template. An error names
// the index (from 0) of the bad message.
func ParseMessages(data []byte) ([]Message, error) {
	v, err := decodeJSON(data)
	if err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	if !v.IsList() {
		return nil, fmt.Errorf("messages: must be a JSON list of {\"role\", \"content\"} objects, not %s", kindName(v))
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	if len(raws) == 0 {
		return nil, errors.New("messages: the list is empty")
	}
	out := make([]Message, len(raws))
	for i, item := range v.AsList().Items {
		if err := checkMessage(item); err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		d := item.AsDict()
		role, _ := d.Get("role")
		out[i] = Message{Role: role.AsString(), JSON: raws[i]}
		if c, ok := d.Get("content"); ok && c.IsString() {
			out[i].Content = c.AsString()
		}
	}
	return out, nil
}

// checkMessage checks the shape of one message.
func checkMessage(m jinja.Value) error {
	if !m.IsDict() {
		return fmt.Errorf("must be an object with role and content, not %s", kindName(m))
	}
	d := m.AsDict()
	role, ok := d.Get("role")
	switch {
	case !ok:
		return errors.New("has no role")
	case !role.IsString():
		return fmt.Errorf("role must be a string, not %s", kindName(role))
	case role.AsString() == "":
		return errors.New("role is empty")
	}
	content, ok := d.Get("content")
	if !ok || content.IsNone() {
		if calls, ok := d.Get("tool_calls"); ok && !calls.IsNone() {
			return nil
		}
		if !ok {
			return fmt.Errorf("(role %q) has no content", role.AsString())
		}
		return fmt.Errorf("(role %q) has null content and no tool_calls", role.AsString())
	}
	if !content.IsString() && !content.IsList() {
		return fmt.Errorf("(role %q) content must be a string or a list of content parts, not %s", role.AsString(), kindName(content))
	}
	return nil
}

// Options are the inputs of a render besides the messages: transformers'
// apply_chat_template arguments.
type Options struct {
	// AddGenerationPrompt ends the text with the header of an assistant turn, for the
	// model to write the reply (the template's add_generation_prompt).
	AddGenerationPrompt bool
	// Tools is a JSON list of tool (function) schemas, as OpenAI and transformers take
	// them; nil gives the template tools = none.
	Tools json.RawMessage
	// Documents is a JSON list of documents for retrieval templates; nil gives none.
	Documents json.RawMessage
	// Vars are further template variables, transformers' extra keyword arguments, e.g.
	// {"enable_thinking": false} for Qwen3. They take the place of special tokens of the
	// same name. Values are JSON-shaped Go values or json.RawMessage.
	Vars map[string]any
	// Now gives the time strftime_now formats (nil: time.Now).
	Now func() time.Time
}

// reserved are the variables Render sets itself.
var reserved = map[string]bool{"messages": true, "tools": true, "documents": true, "add_generation_prompt": true}

// reasoningFields are the names a message's reasoning may come under; transformers
// copies the first one set into "thinking" and "reasoning_content".
var reasoningFields = []string{"reasoning_content", "thinking", "reasoning"}

// Render renders the template for a conversation, exactly as transformers'
// apply_chat_template(messages, tokenize=False, ...) does: the special tokens, opts.Vars,
// messages (with null fields removed and the reasoning fields aliased), tools,
// documents and add_generation_prompt are the template's variables, and
// raise_exception and strftime_now its functions. Encode the result without adding
// special tokens: the template writes them (transformers encodes with
// add_special_tokens=False).
func (t *Template) Render(messages []Message, opts Options) (string, error) {
	if len(messages) == 0 {
		return "", errors.New("chat: no messages to render")
	}
	msgs := make([]jinja.Value, len(messages))
	for i, m := range messages {
		v, err := messageValue(m)
		if err != nil {
			return "", fmt.Errorf("chat: messages[%d]: %w", i, err)
		}
		msgs[i] = v
	}
	data := map[string]jinja.Value{}
	for _, s := range t.Special {
		data[s.Name] = jinja.NewString(s.Value)
	}
	for name, val := range opts.Vars {
		if reserved[name] {
			return "", fmt.Errorf("chat: %s is set by the chat template renderer, not a variable to give", name)
		}
		v, err := goValue(val)
		if err != nil {
			return "", fmt.Errorf("chat: variable %s: %w", name, err)
		}
		data[name] = v
	}
	var err error
	if data["tools"], err = objectList(opts.Tools, "tools"); err != nil {
		return "", err
	}
	if data["documents"], err = objectList(opts.Documents, "documents"); err != nil {
		return "", err
	}
	data["messages"] = jinja.NewList(msgs)
	data["add_generation_prompt"] = jinja.NewBool(opts.AddGenerationPrompt)

	var raised *raisedError
	data["raise_exception"] = jinja.NewCallable("raise_exception", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		msg := ""
		if len(args) > 0 {
			msg = printed(args[0])
		}
		raised = &raisedError{msg}
		return jinja.Undefined(), raised
	})
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	data["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now takes one format string")
		}
		s, err := strftime(now(), args[0].AsString())
		if err != nil {
			return jinja.Undefined(), err
		}
		return jinja.NewString(s), nil
	})

	data[tojsonFunc] = jinja.NewCallable("tojson", tojson)
	data[printFunc] = jinja.NewCallable("print", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 {
			return jinja.Undefined(), errors.New("print takes one value")
		}
		return jinja.NewString(pyStr(args[0])), nil
	})

	out, err := t.jt.RenderValues(data)
	if err != nil {
		if raised != nil {
			return "", &TemplateError{Raised: true, Msg: raised.msg, Line: raiseLine(t.Source, raised.msg), Stage: "rendering"}
		}
		return "", templateError(err, "rendering", t.Source)
	}
	return out, nil
}

// raisedError is what raise_exception returns to stop the render.
type raisedError struct{ msg string }

func (e *raisedError) Error() string { return e.msg }

// printed is a value as the template would print it.
func printed(v jinja.Value) string {
	if v.IsString() {
		return v.AsString()
	}
	return v.String()
}

// raiseCallRE finds raise_exception calls with a literal message.
var raiseCallRE = regexp.MustCompile(`raise_exception\(\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\s*\)`)

// raiseLine finds the line of the raise_exception call that raised msg when exactly one
// call has msg as its literal message (the template library does not keep lines for
// rendering errors); 0 otherwise.
func raiseLine(src, msg string) int {
	line := 0
	for _, m := range raiseCallRE.FindAllStringSubmatchIndex(src, -1) {
		lit := src[m[2]:m[3]]
		if pyUnescape(lit[1:len(lit)-1]) != msg {
			continue
		}
		if line != 0 {
			return 0 // two calls raise the same message
		}
		line = 1 + strings.Count(src[:m[0]], "\n")
	}
	return line
}

// messageValue turns a message into the dict the template sees, as transformers
// prepares it: fields that are null are left out, and a message with reasoning under
// any of its names gets it as both "thinking" (first) and "reasoning_content" (last).
func messageValue(m Message) (jinja.Value, error) {
	var v jinja.Value
	if m.JSON != nil {
		var err error
		if v, err = decodeJSON(m.JSON); err != nil {
			return jinja.Value{}, err
		}
		if err := checkMessage(v); err != nil {
			return jinja.Value{}, err
		}
	} else {
		if m.Role == "" {
			return jinja.Value{}, errors.New("role is empty")
		}
		v = jinja.NewDict()
		v.AsDict().Set("role", jinja.NewString(m.Role))
		v.AsDict().Set("content", jinja.NewString(m.Content))
	}
	src := v.AsDict()
	var reasoning *jinja.Value
	for _, f := range reasoningFields {
		if r, ok := src.Get(f); ok && !r.IsNone() {
			reasoning = &r
			break
		}
	}
	out := jinja.NewDict()
	d := out.AsDict()
	if reasoning != nil {
		d.Set("thinking", *reasoning)
	}
	for _, k := range src.Keys {
		if val := src.Data[k]; !val.IsNone() {
			d.Set(k, val)
		}
	}
	if reasoning != nil {
		// {"thinking": r, **message, "reasoning_content": r}: the message's own
		// "thinking" was kept above in the first place.
		d.Set("reasoning_content", *reasoning)
	}
	return out, nil
}

// objectList decodes an optional JSON list of objects (tools, documents); nil is none.
func objectList(raw json.RawMessage, what string) (jinja.Value, error) {
	if raw == nil {
		return jinja.None(), nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return jinja.Value{}, fmt.Errorf("chat: %s: %w", what, err)
	}
	if v.IsNone() {
		return v, nil
	}
	if !v.IsList() {
		return jinja.Value{}, fmt.Errorf("chat: %s must be a JSON list of objects, not %s", what, kindName(v))
	}
	for i, item := range v.AsList().Items {
		if !item.IsDict() {
			return jinja.Value{}, fmt.Errorf("chat: %s[%d] must be a JSON object, not %s", what, i, kindName(item))
		}
	}
	return v, nil
}
