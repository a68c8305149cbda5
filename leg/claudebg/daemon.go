package claudebg

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/leg/uds"
)

// The control protocol as docs/protocols/claude-daemon.md states it.
const (
	// Proto is the one control-protocol version the gateway speaks (§4).
	Proto = 1
	// MaxLine caps one line from the daemon, as the daemon caps ours (1 MiB).
	MaxLine = 1 << 20

	dialTimeout     = 2 * time.Second
	exchangeTimeout = 10 * time.Second
	maxDaemonText   = 300 // runes of the daemon's own error text we repeat
)

// ErrNoDaemon says no daemon listens for the config dir: no socket, or a
// socket nobody accepts on (left behind by a daemon that died).
var ErrNoDaemon = errors.New("no Claude Code background-agent daemon is running")

// errLineTooLong is a line from the daemon over MaxLine, read and dropped.
var errLineTooLong = errors.New("a line from the daemon is over 1 MiB")

// ProtoError is a daemon that speaks another control-protocol version:
// the gateway does not guess at it (§4).
type ProtoError struct {
	ServerProto   string // as the daemon wrote it (JSON), "" when absent
	ServerVersion string
}

func (e *ProtoError) Error() string {
	p, v := e.ServerProto, e.ServerVersion
	if p == "" {
		p = "(none)"
	}
	if v == "" {
		v = "unknown"
	}
	return fmt.Sprintf("the Claude Code daemon speaks control protocol %s (Claude Code %s); the gateway speaks %d: "+
		"its background agents are not listed until the two match (update the gateway or Claude Code)", p, v, Proto)
}

// DaemonError is a refusal from the daemon: its code and its own words.
type DaemonError struct {
	Op, Code, Text string
}

func (e *DaemonError) Error() string {
	return fmt.Sprintf("the Claude Code daemon refused %s: %s (%s)", e.Op, e.Text, e.Code)
}

// Busy reports a refusal the caller may retry later (§7).
func (e *DaemonError) Busy() bool {
	switch e.Code {
	case "ESTARTING", "ERESPAWNING", "ENOREPLY", "ESTALE", "ETIMEOUT":
		return true
	}
	return false
}

// ConfigDir is Claude Code's config dir as its daemon finds it:
// $CLAUDE_CONFIG_DIR as given, even empty (the CLI then uses the cwd),
// else ~/.claude (§1). lookupEnv is os.LookupEnv but in tests.
func ConfigDir(lookupEnv func(string) (string, bool)) (string, error) {
	if d, set := lookupEnv("CLAUDE_CONFIG_DIR"); set {
		return d, nil
	}
	if home, _ := lookupEnv("HOME"); home != "" {
		return filepath.Join(home, ".claude"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".claude"), nil
}

// SocketPath is the daemon's control socket for a config dir:
// /tmp/cc-daemon-<uid>/<first 8 hex of sha256(absolute NFC config dir)>/control.sock (§1).
func SocketPath(configDir string) (string, error) {
	abs, err := filepath.Abs(norm.NFC.String(configDir))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join("/tmp", fmt.Sprintf("cc-daemon-%d", os.Getuid()), hex.EncodeToString(sum[:])[:8], "control.sock"), nil
}

// checkSocketDir refuses a socket whose directory (or its parent) is not
// ours alone: a directory someone else made is not a daemon we trust (§1).
func checkSocketDir(sock string) error {
	for _, dir := range []string{filepath.Dir(sock), filepath.Dir(filepath.Dir(sock))} {
		fi, err := os.Lstat(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return ErrNoDaemon
			}
			return err
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		switch {
		case !fi.IsDir():
			return fmt.Errorf("%s is not a directory: the gateway does not use a daemon socket under it", dir)
		case st != nil && int(st.Uid) != os.Getuid():
			return fmt.Errorf("%s belongs to uid %d, not to this user: the gateway does not use a daemon socket under it", dir, st.Uid)
		case fi.Mode().Perm() != 0o700:
			return fmt.Errorf("%s has mode %v, not 0700: the gateway does not use a daemon socket under it", dir, fi.Mode().Perm())
		}
	}
	return nil
}

// client speaks to one control socket: one request per connection (§3).
type client struct {
	path string
}

// answer is every field of an answer the gateway reads; the rest is
// ignored.
type answer struct {
	OK            *bool             `json:"ok"`
	Op            string            `json:"op"`
	Code          string            `json:"code"`
	Error         string            `json:"error"`
	ServerProto   json.RawMessage   `json:"serverProto"`
	ServerVersion string            `json:"serverVersion"`
	Proto         json.RawMessage   `json:"proto"`
	Version       string            `json:"version"`
	Jobs          []json.RawMessage `json:"jobs"`
	Short         string            `json:"short"`
	PID           int               `json:"pid"`
}

// refusal is a's error, or nil when a says ok.
func (a *answer) refusal(op string) error {
	if a.OK != nil && *a.OK {
		return nil
	}
	if a.Code == "EPROTO" {
		return &ProtoError{ServerProto: clean(string(a.ServerProto), 16), ServerVersion: clean(a.ServerVersion, 40)}
	}
	code := a.Code
	if code == "" {
		code = "no code"
	}
	return &DaemonError{Op: op, Code: clean(code, 20), Text: clean(a.Error, maxDaemonText)}
}

// clean is the daemon's text made fit to repeat: no control characters,
// at most n runes.
func clean(s string, n int) string { return bounded.Clip(stripTerminal(s), n) }

// dial connects and checks that the listener runs as this user: the
// daemon checks the same of us (§1, EPEERUID).
func (c client) dial(ctx context.Context) (*net.UnixConn, error) {
	if err := checkSocketDir(c.path); err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "unix", c.path)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, ErrNoDaemon
		}
		return nil, fmt.Errorf("the Claude Code daemon's socket %s: %w", c.path, err)
	}
	uc := conn.(*net.UnixConn)
	cred, err := uds.PeerCred(uc)
	if err != nil {
		uc.Close()
		return nil, fmt.Errorf("the Claude Code daemon's socket %s: %w", c.path, err)
	}
	if cred.UID != os.Getuid() {
		uc.Close()
		return nil, fmt.Errorf("the Claude Code daemon's socket %s is served by uid %d, not this user", c.path, cred.UID)
	}
	return uc, nil
}

// do sends one request and reads its one answer, within exchangeTimeout
// or ctx, whichever ends first.
func (c client) do(ctx context.Context, req map[string]any) (*answer, error) {
	op, _ := req["op"].(string)
	line, err := request(req)
	if err != nil {
		return nil, err
	}
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	_ = conn.SetDeadline(time.Now().Add(exchangeTimeout))
	if _, err := conn.Write(line); err != nil {
		return nil, fmt.Errorf("%s to the Claude Code daemon: %w", op, err)
	}
	b, err := readLine(bufio.NewReaderSize(conn, 64<<10))
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // an answer is owed
		}
		return nil, fmt.Errorf("%s to the Claude Code daemon: %w", op, err)
	}
	var a answer
	if err := json.Unmarshal(b, &a); err != nil || a.OK == nil {
		return nil, fmt.Errorf("%s to the Claude Code daemon: its answer is not one: %q", op, clean(string(b), 80))
	}
	if err := a.refusal(op); err != nil {
		return nil, err
	}
	return &a, nil
}

// request is req as one line, refused when the daemon would refuse it
// for its size (ETOOLARGE).
func request(req map[string]any) ([]byte, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if len(b) >= MaxLine {
		return nil, fmt.Errorf("a %v request of %d bytes is over the daemon's 1 MiB", req["op"], len(b))
	}
	return append(b, '\n'), nil
}

// readLine reads one line of at most MaxLine bytes. A longer one is read
// to its end and dropped (errLineTooLong), so the next line can be read.
// A last line with no newline counts.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > MaxLine+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		switch {
		case tooLong:
			return nil, errLineTooLong
		case err != nil && (!errors.Is(err, io.EOF) || len(line) == 0):
			return nil, err
		}
		return bytes.TrimSuffix(line, []byte("\n")), nil
	}
}

// lineWaiting reports whether r already holds a whole next line: a
// subscription's stream frames that came together are shown as one event.
func lineWaiting(r *bufio.Reader) bool {
	b, _ := r.Peek(r.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}
