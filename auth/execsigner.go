package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Limits on an exec signer's program.
const (
	DefaultExecTimeout = 10 * time.Second // used when NewExecSigner is given none
	MaxExecOutput      = 64 << 10         // stdout beyond this is an error, not truncated
	execStderrTail     = 2 << 10          // how much of stderr an error quotes
	execWaitDelay      = time.Second      // after a kill, how long to wait for pipes a grandchild holds
)

// Errors from an exec signer, to be matched with errors.Is; each comes
// wrapped in an *ExecError naming the program.
var (
	ErrExecNoProgram      = errors.New("no signer program configured")
	ErrExecTimeout        = errors.New("signer program timed out")
	ErrExecOutputTooLarge = fmt.Errorf("signer program wrote more than %d bytes", MaxExecOutput)
	ErrExecFailed         = errors.New("signer program failed")
	ErrExecBadOutput      = errors.New("signer program wrote no valid attestation")
)

// ExecError is the failure of one run of an exec signer's program.
type ExecError struct {
	Program  string // argv[0]
	ExitCode int    // -1 when the program did not exit on its own
	Stderr   string // the last bytes of its stderr, for the user to read
	Err      error  // one of the ErrExec* errors, possibly wrapping more
}

func (e *ExecError) Error() string {
	s := fmt.Sprintf("auth: exec signer %s: %v", e.Program, e.Err)
	if e.ExitCode >= 0 {
		s += fmt.Sprintf(" (exit status %d)", e.ExitCode)
	}
	if tail := strings.TrimSpace(e.Stderr); tail != "" {
		s += "; stderr: " + tail
	}
	return s
}

func (e *ExecError) Unwrap() error { return e.Err }

type execSigner struct {
	argv    []string
	timeout time.Duration
}

// NewExecSigner returns a signer that runs argv (argv[0] found through PATH,
// never through a shell) once per Sign, with the canonical bytes on stdin. The
// program must exit 0 and write one Attestation as JSON on stdout, at most
// MaxExecOutput bytes, within timeout (DefaultExecTimeout if timeout <= 0).
// Fields it leaves empty among type, canonicalization and payloadSha256 are
// filled in; ones it sets must be right. Unknown fields are refused, so a
// misspelt "sig" is an error rather than a silently unsigned event.
func NewExecSigner(argv []string, timeout time.Duration) Signer {
	if timeout <= 0 {
		timeout = DefaultExecTimeout
	}
	return &execSigner{argv: append([]string(nil), argv...), timeout: timeout}
}

func (s *execSigner) Sign(ctx context.Context, canonical []byte) (Attestation, error) {
	if len(s.argv) == 0 || s.argv[0] == "" {
		return Attestation{}, &ExecError{ExitCode: -1, Err: ErrExecNoProgram}
	}
	fail := func(code int, stderr *tailWriter, err error) (Attestation, error) {
		return Attestation{}, &ExecError{Program: s.argv[0], ExitCode: code, Stderr: stderr.String(), Err: err}
	}
	runCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, s.argv[0], s.argv[1:]...)
	stdout := &capWriter{max: MaxExecOutput}
	stderr := &tailWriter{max: execStderrTail}
	cmd.Stdin = bytes.NewReader(canonical)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = execWaitDelay
	err := cmd.Run()
	code := -1
	if cmd.ProcessState != nil && cmd.ProcessState.Exited() {
		code = cmd.ProcessState.ExitCode()
	}
	switch {
	case ctx.Err() != nil: // the caller gave up: not the program's fault
		return fail(code, stderr, ctx.Err())
	case runCtx.Err() != nil:
		return fail(code, stderr, fmt.Errorf("%w after %v", ErrExecTimeout, s.timeout))
	case stdout.overflow:
		return fail(code, stderr, ErrExecOutputTooLarge)
	case err != nil:
		return fail(code, stderr, fmt.Errorf("%w: %w", ErrExecFailed, err))
	}
	a, err := parseExecOutput(stdout.buf.Bytes(), canonical)
	if err != nil {
		return fail(code, stderr, err)
	}
	return a, nil
}

// parseExecOutput reads the program's attestation and checks it attests
// these canonical bytes.
func parseExecOutput(out, canonical []byte) (Attestation, error) {
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	var a Attestation
	if err := dec.Decode(&a); err != nil {
		return Attestation{}, fmt.Errorf("%w: %w", ErrExecBadOutput, err)
	}
	if dec.More() {
		return Attestation{}, fmt.Errorf("%w: more than one JSON value", ErrExecBadOutput)
	}
	want := unsigned(canonical)
	for _, f := range []struct {
		name      string
		got       *string
		want      string
		mismatchE error
	}{
		{"type", &a.Type, want.Type, ErrWrongType},
		{"canonicalization", &a.Canonicalization, want.Canonicalization, ErrWrongType},
		{"payloadSha256", &a.PayloadSHA256, want.PayloadSHA256, ErrDigestMismatch},
	} {
		switch *f.got {
		case "":
			*f.got = f.want
		case f.want:
		default:
			return Attestation{}, fmt.Errorf("%w: %w: %s is %q", ErrExecBadOutput, f.mismatchE, f.name, *f.got)
		}
	}
	switch {
	case a.Algorithm == "":
		return Attestation{}, fmt.Errorf("%w: no algorithm", ErrExecBadOutput)
	case a.Algorithm == AlgNone && (len(a.Signature) > 0 || a.KeyID != ""):
		return Attestation{}, fmt.Errorf("%w: algorithm none with a key id or signature", ErrExecBadOutput)
	case a.Algorithm != AlgNone && (len(a.Signature) == 0 || a.KeyID == ""):
		return Attestation{}, fmt.Errorf("%w: algorithm %q without a key id and signature", ErrExecBadOutput, a.Algorithm)
	}
	return a, nil
}

// capWriter keeps up to max bytes; past that it fails the write, which closes
// the pipe so a runaway program gets EPIPE instead of running to the timeout.
type capWriter struct {
	buf      bytes.Buffer
	max      int
	overflow bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.max {
		w.overflow = true
		return 0, ErrExecOutputTooLarge
	}
	return w.buf.Write(p)
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	buf []byte
	max int
}

func (w *tailWriter) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > w.max {
		p = p[len(p)-w.max:]
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) > w.max {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-w.max:]...)
	}
	return n, nil
}

func (w *tailWriter) String() string { return strings.ToValidUTF8(string(w.buf), "") }
