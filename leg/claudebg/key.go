package claudebg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// ErrNoKey says the gateway holds no usable control key: reply and
// dispatch need it (§2).
var ErrNoKey = errors.New("no control key for the Claude Code daemon")

// maxKeyFile is the largest key file the daemon itself accepts.
const maxKeyFile = 4096

var keyPattern = regexp.MustCompile(`^[a-f0-9]{32}$`)

func keyPath(configDir string) string { return filepath.Join(configDir, "daemon", "control.key") }

// controlKey is the daemon's control key: slog and fmt print it
// redacted; only the request's JSON carries it.
type controlKey string

func (controlKey) LogValue() slog.Value { return slog.StringValue("[redacted]") }
func (controlKey) String() string       { return "[redacted]" }

// keyCache reads the key file when it changed (safefile.ReadSecret: a
// regular file, not a symlink, private), so a daemon restart that wrote a
// new key is picked up.
type keyCache struct {
	mu  sync.Mutex
	fi  fs.FileInfo
	key controlKey
}

// get is the key; fresh reads the file even when it looks unchanged.
func (c *keyCache) get(path string, fresh bool) (controlKey, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev := c.fi
	if fresh {
		prev = nil
	}
	b, fi, err := safefile.ReadSecret(path, maxKeyFile, prev)
	if err != nil {
		c.fi, c.key = nil, ""
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%w: %s does not exist (the daemon writes it when it starts: `claude --bg`)", ErrNoKey, path)
		}
		return "", fmt.Errorf("%w: %s: %v", ErrNoKey, path, err)
	}
	if fi == prev && c.key != "" {
		return c.key, nil
	}
	k := strings.TrimSpace(string(b))
	if !keyPattern.MatchString(k) {
		c.fi, c.key = nil, ""
		return "", fmt.Errorf("%w: %s does not hold 32 hex characters", ErrNoKey, path)
	}
	c.fi, c.key = fi, controlKey(k)
	return c.key, nil
}

// Dispatch hands the daemon new work: a background agent in cwd whose
// first prompt is text (`dispatch`, with the control key; §5). It
// returns the agent as listed once the daemon took it. A lost answer is
// retried once with the same nonce, which the daemon acknowledges
// without running it twice.
func (l *Leg) Dispatch(ctx context.Context, text, cwd string) (message.Session, error) {
	if strings.TrimSpace(text) == "" {
		return message.Session{}, fmt.Errorf("%w: no prompt given", message.ErrBadStart)
	}
	if len(text) > MaxReplyText {
		return message.Session{}, fmt.Errorf("%w: the prompt is over %d bytes", message.ErrBadStart, MaxReplyText)
	}
	abs, err := leg.CheckWorkDir(cwd)
	if err != nil {
		return message.Session{}, err
	}
	id := uuid.New().String()
	short := id[:8]
	nonce := make([]byte, 4)
	if _, err := rand.Read(nonce); err != nil {
		return message.Session{}, err
	}
	d := map[string]any{"proto": Proto, "short": short, "nonce": hex.EncodeToString(nonce), "sessionId": id,
		"createdAt": l.clk.Now().UnixMilli(), "source": "shell", "cwd": abs,
		"launch": map[string]any{"mode": "prompt", "args": []string{"--session-id", id, text}},
		"env":    map[string]any{}} // the worker gets the daemon's environment, nothing of ours
	var a *answer
	for try := 0; try < 2; try++ {
		a, err = l.keyed(ctx, map[string]any{"op": "dispatch", "timeoutMs": 5000, "d": d})
		var de *DaemonError
		if err == nil || errors.As(err, &de) || errors.Is(err, ErrNoKey) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return message.Session{}, err
	}
	l.log.Info("background agent dispatched", "agent", short, "cwd", abs)
	select {
	case l.poke <- struct{}{}: // follow it now, not at the next poll
	default:
	}
	r := record{Short: short, SessionID: id, PID: a.PID, Cwd: abs, Tempo: "active", Intent: text, StartedAt: l.clk.Now().UnixMilli()}
	return r.session(), nil
}
