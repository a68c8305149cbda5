package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"

	"github.com/sessiongateway/gateway/api"
)

// Exit codes, so scripts can tell outcomes apart. docs/cli.md's table says the
// same.
const (
	ExitOK           = 0
	ExitError        = 1
	ExitUsage        = 2
	ExitNotDelivered = 3 // a final receipt other than delivered
	ExitPending      = 4 // --wait timed out before a final receipt
)

// Error codes of the CLI's own errors under --json; an error the gateway
// answered keeps the API's code (not_found, ambiguous, ...).
const (
	CodeUsage       = "usage"
	CodeUnreachable = "unreachable"
	CodeNotFound    = api.CodeNotFound
	CodeFailed      = "failed"
)

// IO is what a verb gets: where to print, whether as JSON, and which
// gateway to ask.
type IO struct {
	Stdout, Stderr io.Writer
	Stdin          io.Reader // what send - reads; nil reads os.Stdin
	JSON           bool
	StateDir       string
	// DefaultStateDir is the state directory without --state-dir: hints name
	// --state-dir only when StateDir differs.
	DefaultStateDir string
}

// Client asks the gateway of the state directory over its socket.
func (o *IO) Client() *api.Client {
	return api.NewUnixClient(filepath.Join(o.StateDir, "gateway.sock"))
}

// Cmd spells a follow-up command the way the user can paste it: with
// --state-dir when theirs is not the default.
func (o *IO) Cmd(words string) string {
	s := "gateway " + words
	if o.otherDir() {
		s += " --state-dir " + shellQuote(o.StateDir)
	}
	return s
}

func (o *IO) otherDir() bool {
	return o.StateDir != "" && o.DefaultStateDir != "" && filepath.Clean(o.StateDir) != filepath.Clean(o.DefaultStateDir)
}

// hinted is w with the follow-up commands that lines from below spell
// ("gateway allow ID") given the user's --state-dir, when not the default.
func (o *IO) hinted(w io.Writer) io.Writer {
	if !o.otherDir() {
		return w
	}
	dir := "gateway --state-dir " + shellQuote(o.StateDir) + " "
	var pairs []string
	for _, verb := range []string{"allow", "deny", "answer", "release", "held", "permissions", "remote"} {
		pairs = append(pairs, "gateway "+verb+" ", dir+verb+" ")
	}
	return hintWriter{w, strings.NewReplacer(pairs...)}
}

// hintWriter rewrites each write: the lines it carries are whole.
type hintWriter struct {
	w io.Writer
	r *strings.Replacer
}

func (h hintWriter) Write(p []byte) (int, error) {
	if _, err := h.r.WriteString(h.w, string(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[](){};&|<>#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Print writes v as JSON under --json, else calls text.
func (o *IO) Print(v any, text func(w io.Writer)) {
	if o.JSON {
		PrintJSON(o.Stdout, v)
		return
	}
	text(o.Stdout)
}

// Note tells the person something beside the output: on stderr, so a
// pipe of stdout keeps only the data.
func (o *IO) Note(format string, a ...any) {
	if !o.JSON {
		fmt.Fprintf(o.Stderr, format+"\n", a...)
	}
}

// PrintJSON writes v indented, one document.
func PrintJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// Error is a verb's failure with the exit code it means. Quiet errors
// have been reported already (a send's result says it was not delivered).
type Error struct {
	Exit  int
	Code  string
	Err   error
	Quiet bool
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Exit)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Usagef is a command line that cannot work: exit 2.
func Usagef(format string, a ...any) error {
	return &Error{Exit: ExitUsage, Code: CodeUsage, Err: fmt.Errorf(format, a...)}
}

// Exit ends the verb with code, its outcome already printed.
func Exit(code int) error { return &Error{Exit: code, Quiet: true} }

// unreachable says whether err is the control socket not answering: no
// gateway runs with this state directory.
func unreachable(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// ErrorBody is the one error shape on stdout under --json.
type ErrorBody = api.Error

// Report prints err as the verb's failure and returns its exit code:
// under --json one {"error", "code"} document on stdout (the gateway's own
// answer as it came, with its candidates and suggestions), else a line on
// stderr.
func Report(o *IO, err error) int {
	if err == nil {
		return ExitOK
	}
	exit, body := ExitError, ErrorBody{Error: err.Error(), Code: CodeFailed}
	var ce *Error
	if errors.As(err, &ce) {
		if ce.Quiet {
			return ce.Exit
		}
		exit, body.Code = ce.Exit, ce.Code
	}
	var ae *api.APIError
	switch {
	case errors.As(err, &ae):
		body = ae.Body
		if body.Code == "" {
			body.Code = CodeFailed
		}
	case unreachable(err):
		body.Code = CodeUnreachable
	}
	switch {
	case o.JSON:
		PrintJSON(o.Stdout, body)
	case body.Code == CodeUnreachable:
		fmt.Fprintf(o.Stderr, "gateway: %v\nstart it with: %s\n", err, o.Cmd("serve"))
	default:
		fmt.Fprintf(o.Stderr, "gateway: %v\n", err)
	}
	return exit
}
