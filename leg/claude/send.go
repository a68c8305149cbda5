package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

// MaxLine is the largest line a peer accepts.
const MaxLine = 1 << 20

// ErrTooLarge means the frame would exceed the receiver's line cap.
var ErrTooLarge = errors.New("message_too_large: the frame exceeds the 1 MiB line cap")

// ErrStaleKey means the target's key file belongs to an earlier process.
var ErrStaleKey = errors.New("the target's key file belongs to another process (recycled pid): refusing to send")

// socketOf reads the socket path of a uds: address, percent-decoded.
func socketOf(address string) (string, error) {
	path, ok := addressing.SocketOf(address)
	if !ok || !filepath.IsAbs(path) {
		return "", fmt.Errorf("not a uds: address: %q", address)
	}
	return path, nil
}

// Send writes m to its target: the auth line with the target's peerToken when
// it has a key file, then the user frame with the envelope, in one write.
func (p *Leg) Send(ctx context.Context, m message.Message) (message.Receipt, error) {
	path, err := socketOf(m.To)
	if err != nil {
		return message.Receipt{}, err
	}
	name := m.FromName
	if name == "" {
		name = p.cfg.Name
	}
	chain := m.HopChain
	if len(chain) > 0 {
		// A forwarded message carries our hop token, so a loop through us is seen.
		chain = AppendHop(chain, p.hopToken)
	}
	env := Envelope{
		From: p.addr, FromSession: p.sessionID, HopChain: chain,
		FromName: SanitizeName(name), FromMode: m.Mode.String(), FromPlugin: m.Plugin, Body: m.Body,
	}
	if err := env.Validate(); err != nil {
		return message.Receipt{}, fmt.Errorf("envelope: %w", err)
	}
	atts, err := p.stage(m.Attachments)
	if err != nil {
		return message.Receipt{}, err
	}
	f := NewUserFrame(p.addr, m.ID, env, atts)
	p.sent.add(m.ID, path)
	if err := p.write(ctx, path, m.ToPID, f); err != nil {
		p.sent.forget(m.ID)
		removeStaged(atts)
		return message.Receipt{}, err
	}
	return message.Receipt{MsgID: m.ID, Status: message.StatusSent, Time: p.clock.Now()}, nil
}

// write sends one frame to the socket at path, with an auth line when the
// target has a usable key file. pid is the target's registered pid when a
// roster gave it; 0 reads it from the key file, if there is one. The
// socket's listener must be that process before anything, token or frame,
// is written; without a pid, any listener of our uid will do.
func (p *Leg) write(ctx context.Context, path string, pid int, f Frame) error {
	// The frame line is encoded after room for the auth line, which goes
	// in front of it once the target's token is known: the payload of the
	// one write, built in one buffer.
	buf := bytes.NewBuffer(make([]byte, authRoom, authRoom+512+len(f.content())))
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false) // as Frame.Marshal
	if err := enc.Encode(f); err != nil {
		return err
	}
	b := buf.Bytes()
	if len(b)-authRoom > MaxLine { // the frame's line, its newline included
		return ErrTooLarge
	}
	if err := p.registry.Check(); err != nil {
		return err
	}
	t, err := p.targetOf(path, pid)
	if err != nil {
		return err
	}
	payload := b[authRoom:]
	if t.token != "" {
		ab, err := json.Marshal(Auth{Type: TypeAuth, Token: t.token})
		if err != nil {
			return err
		}
		if at := authRoom - len(ab) - 1; at >= 0 {
			copy(b[at:], ab)
			b[authRoom-1] = '\n'
			payload = b[at:]
		} else { // a token longer than any Claude Code writes
			payload = append(append(ab, '\n'), payload...)
		}
	}
	if err := uds.DialWriteHeld(ctx, path, t.holder, payload); err != nil {
		if errors.Is(err, uds.ErrNotHolder) {
			p.log.Info("nothing sent: the target socket belongs to another process", "to", path, "err", err)
		}
		return fmt.Errorf("writing to %s: %w", path, err)
	}
	return nil
}

// authRoom is the room kept in front of a frame for its auth line: a
// 32-hex-digit peerToken's line takes 58 bytes.
const authRoom = 128

// target is what our registry says of a socket we write to: the peerToken
// to present ("" without a key file) and who must be listening.
type target struct {
	token  string
	holder uds.Holder
}

// targetOf reads the target's peerToken from its key file, checking the
// key's process is the one alive under that pid, and names the listener
// the socket must have: the pid, in the pid namespace its registry entry
// (or else its key file) names. No key file: no token, as the real CLI
// accepts on Linux.
func (p *Leg) targetOf(path string, pid int) (target, error) {
	hash := socketHash(path)
	if pid <= 0 {
		pid = p.pidFor(path, hash)
	}
	if pid <= 0 {
		return target{}, nil // nothing in the registry names the socket
	}
	keyPath := filepath.Join(p.sessionsDir, fmt.Sprintf("%d.%s.key", pid, hash))
	var t target
	domain, hasDomain := "", false
	k, err := p.keyFiles.Get(keyPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return target{}, fmt.Errorf("target key file: %w", err)
	default:
		domain, hasDomain = k.PidDomain, k.PidDomain != ""
		if (!hasDomain || domain == p.pidDomain) && k.ProcStart != "" && staleKey(pid, k.ProcStart) {
			return target{}, ErrStaleKey
		}
		t.token = k.PeerToken
	}
	if e, ok := p.entryOf(pid); ok && e.MessagingSocketPath == path {
		domain, hasDomain = e.PidDomain, e.hasPidDomain
	}
	t.holder = p.holderOf(pid, domain, hasDomain)
	return t, nil
}

// staleKey says a key file's procStart is not the process alive under pid
// now (a recycled pid); a process that is gone leaves nothing to tell. A
// running process pinned by LiveStart answers both at once: one poll, no
// signal 0 beside it.
func staleKey(pid int, procStart string) bool {
	if isDigits(procStart) {
		if ticks, ok := uds.LiveStart(pid); ok {
			return strconv.FormatUint(ticks, 10) != procStart
		}
	}
	return uds.Alive(pid) && !procStartMatches(pid, procStart)
}

// pidFor is the pid the registry gives the socket at path: the one key
// file for it, else the first entry naming it whose process is alive; 0
// when neither says.
func (p *Leg) pidFor(path, hash string) int {
	matches, _ := filepath.Glob(filepath.Join(p.sessionsDir, "*."+hash+".key"))
	if len(matches) == 1 {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(matches[0]), "%d.", &pid); err == nil {
			return pid
		}
	}
	entries, _, _ := p.readEntries()
	for _, e := range entries {
		if e.MessagingSocketPath == path && uds.Alive(e.PID) {
			return e.PID
		}
	}
	return 0
}

// removeStaged deletes staged copies we made, when a send fails after staging.
func removeStaged(atts []message.Attachment) {
	for _, a := range atts {
		_ = os.Remove(a.Path)
	}
}

// maxOutstanding bounds the sends whose receipts we still accept; the oldest
// is forgotten first. The real CLI keeps 200; a gateway sends for many.
const maxOutstanding = 4096

// outstanding remembers where each message we sent went (msg_id -> target
// socket path), so a receipt about it is believed only when it comes from
// that socket: knowing a message id is not enough to forge its outcome.
type outstanding struct{ to *bounded.Map[string, string] }

func newOutstanding() outstanding {
	return outstanding{to: bounded.NewMap[string, string](maxOutstanding)}
}

func (o outstanding) add(msgID, path string) {
	if msgID != "" {
		o.to.Put(msgID, path)
	}
}

func (o outstanding) forget(msgID string) { o.to.Delete(msgID) }

// from reports whether a receipt about msgID may come from the uds: address
// from: the message went to that very socket.
func (o outstanding) from(msgID, from string) bool {
	path, ok := addressing.SocketOf(from)
	if !ok {
		return false
	}
	to, ok := o.to.Get(msgID)
	return ok && to == path
}

// content is the user message's text, "" for a frame without one.
func (f Frame) content() string {
	if f.Message == nil {
		return ""
	}
	return f.Message.Content
}
