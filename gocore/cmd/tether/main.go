// Command tether is the command-line face of tether's Go core.
//
//	tether version
//	tether tokenize --tokenizer tokenizer.json (--text S | --input FILE) [--add-special]
//
// Later commands (validate, gbnf, mask-bench, generate, ...) are added beside these.
// Exit status: 0 success, 1 a negative answer (e.g. input rejected), 2 bad usage or input.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/tetherlm/tether/gocore/engine"
)

// command is one subcommand: its one-line help and its entry point.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// commands holds every subcommand. Each lives in a file of its own and adds itself
// with register from an init function, so new commands touch no shared file.
var commands = map[string]command{}

// register adds a subcommand; it is called from init functions only.
func register(name, summary string, run func(args []string, stdout, stderr io.Writer) error) {
	if _, dup := commands[name]; dup {
		panic("tether: command registered twice: " + name)
	}
	commands[name] = command{summary, run}
}

func init() {
	register("version", "print tether's version", runVersion)
}

const version = "0.1.0"

// exitError carries a specific exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// usageError marks bad command-line usage (exit status 2).
func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		// The CLI boundary: a panic is a bug in tether, reported as such.
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "tether: internal error (a bug in tether, please report it): %v\n", r)
			code = 3
		}
	}()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "tether: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	err := cmd.run(args[1:], stdout, stderr)
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "tether %s: %v\n", args[0], err)
	var le *engine.LimitError
	if errors.As(err, &le) {
		return 2 // a grammar limit: like a bad input, never a mask
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: tether <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'tether <command> -h' for a command's flags.")
}

func runVersion(args []string, stdout, _ io.Writer) error {
	fmt.Fprintln(stdout, "tether", version)
	return nil
}

// newFlags makes a FlagSet that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("tether "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args and turns flag errors into usage errors (exit status 2).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &exitError{code: 2, err: err}
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	return nil
}
