package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/tetherlm/tether/gocore/chat"
)

func init() {
	register("chat-template", "render a model's chat template for a conversation (or list its templates)", runChatTemplate)
}

// runChatTemplate prints the rendered prompt exactly, with no newline added, so that it
// can be compared byte for byte with transformers' apply_chat_template(tokenize=False).
func runChatTemplate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chat-template", stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tether chat-template --model DIR (--messages FILE | --user TEXT ...) [flags]\n"+
			"       tether chat-template --model DIR --list\n\n"+
			"Prints the prompt the model's chat template makes of a conversation, as transformers'\n"+
			"apply_chat_template(..., tokenize=False) does, with no newline added. Flags:")
		printFlags(stderr, fs)
	}
	dir := fs.String("model", "", "model directory: tokenizer_config.json and/or chat_template.jinja (required)")
	list := fs.Bool("list", false, "list the model's chat templates and special tokens instead of rendering")
	cf := addChatFlags(fs, false)
	noGen := fs.Bool("no-generation-prompt", false, "end after the last message, without the header of an assistant turn (add_generation_prompt=false)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return usageError("--model is required")
	}
	ts, err := chat.Load(*dir)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if *list {
		for _, n := range ts.Names() {
			src, _ := ts.Source(n)
			fmt.Fprintf(stdout, "template %s (%d lines)\n", n, 1+strings.Count(src, "\n"))
		}
		for _, v := range ts.SpecialTokens() {
			fmt.Fprintf(stdout, "%s = %q\n", v.Name, v.Value)
		}
		return nil
	}
	if !cf.given() {
		return usageError("give the conversation: --messages FILE, or --system/--user/--assistant")
	}
	prompt, err := cf.render(ts, !*noGen)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, prompt)
	return err
}

// chatFlags are the conversation flags shared by chat-template and generate --chat.
type chatFlags struct {
	chat     *bool // generate only: --chat
	system   *string
	turns    []chat.Message // --user and --assistant in command-line order
	messages *string
	tools    *string
	template *string
	thinking *bool
	noThink  *bool
	vars     stringList
}

// addChatFlags registers the conversation flags on fs; withChat adds --chat (generate).
func addChatFlags(fs *flag.FlagSet, withChat bool) *chatFlags {
	cf := &chatFlags{}
	if withChat {
		cf.chat = fs.Bool("chat", false, "prompt with the model's chat template: the conversation is --system/--user/--assistant or --messages, and the rendered prompt is encoded without adding special tokens")
	}
	cf.system = fs.String("system", "", "chat: the system message (first)")
	fs.Var(&turnFlag{cf, "user"}, "user", "chat: a user message `TEXT` (repeatable; --user and --assistant keep their command-line order)")
	fs.Var(&turnFlag{cf, "assistant"}, "assistant", "chat: an assistant message `TEXT` (repeatable)")
	cf.messages = fs.String("messages", "", "chat: a JSON file (- for stdin) with the conversation: a list of {\"role\", \"content\"} objects (other fields, e.g. tool_calls, are passed to the template)")
	cf.tools = fs.String("tools", "", "chat: a JSON file with a list of tool (function) schemas for templates that take tools")
	cf.template = fs.String("template", "", "chat: the template to use when the model has several (empty: tool_use with --tools if the model has it, else default)")
	cf.thinking = fs.Bool("enable-thinking", false, "chat: enable_thinking=true (Qwen3-style templates)")
	cf.noThink = fs.Bool("no-thinking", false, "chat: enable_thinking=false (Qwen3-style templates: an empty <think></think> block)")
	fs.Var(&cf.vars, "chat-var", "chat: a further template variable `NAME=JSON`, e.g. reasoning_effort=\"low\" (repeatable)")
	return cf
}

// turnFlag appends a message of one role to the conversation.
type turnFlag struct {
	cf   *chatFlags
	role string
}

func (t *turnFlag) String() string { return "" }
func (t *turnFlag) Set(s string) error {
	t.cf.turns = append(t.cf.turns, chat.Message{Role: t.role, Content: s})
	return nil
}

// given reports whether any conversation flag was set.
func (cf *chatFlags) given() bool {
	return *cf.system != "" || len(cf.turns) > 0 || *cf.messages != ""
}

// enabled reports whether generate should prompt with the chat template: --chat, or a
// conversation flag.
func (cf *chatFlags) enabled() bool { return (cf.chat != nil && *cf.chat) || cf.given() }

// render renders ts's template for the conversation given by the flags.
func (cf *chatFlags) render(ts *chat.Templates, addGenerationPrompt bool) (string, error) {
	var msgs []chat.Message
	if *cf.messages != "" {
		if *cf.system != "" || len(cf.turns) > 0 {
			return "", usageError("give --messages or --system/--user/--assistant, not both")
		}
		data, err := readInput(*cf.messages)
		if err != nil {
			return "", usageError("--messages: %v", err)
		}
		if msgs, err = chat.ParseMessages(data); err != nil {
			return "", usageError("--messages %s: %v", *cf.messages, err)
		}
	} else {
		if *cf.system != "" {
			msgs = append(msgs, chat.Message{Role: "system", Content: *cf.system})
		}
		msgs = append(msgs, cf.turns...)
		if len(msgs) == 0 {
			return "", usageError("--chat needs a conversation: --user TEXT (with --system, --assistant) or --messages FILE")
		}
	}
	opts := chat.Options{AddGenerationPrompt: addGenerationPrompt, Vars: map[string]any{}}
	if *cf.tools != "" {
		data, err := readInput(*cf.tools)
		if err != nil {
			return "", usageError("--tools: %v", err)
		}
		opts.Tools = data
	}
	if *cf.thinking && *cf.noThink {
		return "", usageError("give --enable-thinking or --no-thinking, not both")
	}
	if *cf.thinking || *cf.noThink {
		opts.Vars["enable_thinking"] = *cf.thinking
	}
	for _, kv := range cf.vars {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return "", usageError("--chat-var %q: want NAME=JSON", kv)
		}
		if !json.Valid([]byte(val)) {
			return "", usageError("--chat-var %s: the value %q is not JSON (a string needs quotes: %s='\"text\"')", name, val, name)
		}
		opts.Vars[name] = json.RawMessage(val)
	}
	tm, err := ts.Select(*cf.template, opts.Tools != nil)
	if err != nil {
		return "", &exitError{code: 2, err: err}
	}
	out, err := tm.Render(msgs, opts)
	if err != nil {
		return "", &exitError{code: 2, err: err}
	}
	return out, nil
}

// chatPrompt renders the conversation of generate --chat with the model's template.
func chatPrompt(dir string, cf *chatFlags) (string, error) {
	ts, err := chat.Load(dir)
	if err != nil {
		return "", &exitError{code: 2, err: err}
	}
	return cf.render(ts, true)
}
