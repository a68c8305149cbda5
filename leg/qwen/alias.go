package qwen

import (
	"context"
	"os"
	"path/filepath"
	"sync"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

// On the Qwen side an alias is one more record of this process
// (<pid>-<8 hex>.json: docs/protocols/qwen-cross-session.md#alias-records), with our inbox and token and a session id of
// its own; frames pinned to that id are for the session it stands for.

// KindAlias is the record kind of the gateway's aliases.
const KindAlias = "gateway-alias"

type alias struct {
	origin message.Session // the session on another leg
	sid    string
	path   string
}

// replyTo is how to reach the sender of a message that came to an alias.
type replyTo struct {
	from  string
	token Token
	pid   int // the sending process, which must be listening at from
}

// maxReplies bounds remembered reply addresses; the oldest is forgotten.
const maxReplies = 4096

type aliases struct {
	mu    sync.Mutex
	byKey map[string]*alias // by originKey

	bySID   map[string]*alias
	paths   map[string]bool
	replies *bounded.Map[string, replyTo] // by msgId: whom to tell what became of a bridged message
	// retired are the aliases a sync forgot, by session id: a frame the
	// inbox admitted for one just before is still for its session, not for
	// the gateway. The inbox admits none for them once forgotten.
	retired *bounded.Map[string, *alias]
}

// maxRetired bounds the retired aliases remembered; the oldest is
// forgotten (a frame for it admitted so long ago has been delivered).
const maxRetired = 1024

// originKey tells the sessions we alias apart: by address and session id,
// since sessions of one process may share an address.
func originKey(s message.Session) string { return s.Address + "\x00" + s.SessionID }

func newAliases() *aliases {
	return &aliases{byKey: map[string]*alias{}, bySID: map[string]*alias{}, paths: map[string]bool{},
		replies: bounded.NewMap[string, replyTo](maxReplies), retired: bounded.NewMap[string, *alias](maxRetired)}
}

func (a *aliases) bySession(sid string) (*alias, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	al, ok := a.bySID[sid]
	return al, ok
}

// admittedFor is the alias a frame admitted for session sid is for: a
// current one, or one a sync forgot since.
func (a *aliases) admittedFor(sid string) (*alias, bool) {
	if al, ok := a.bySession(sid); ok {
		return al, true
	}
	return a.retired.Get(sid)
}

func (a *aliases) isAliasPath(path string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.paths[path]
}

func (a *aliases) remember(msgID string, r replyTo) { a.replies.Put(msgID, r) }

func (a *aliases) reply(msgID string) (replyTo, bool) { return a.replies.Get(msgID) }

// SyncAliases publishes a record for each session of another leg and
// removes the records of those gone. An alias is known to the inbox before
// its record is written: a sender may read the record and send to its
// session id at once, and that frame must not be judged misaddressed.
func (p *Leg) SyncAliases(_ context.Context, others []message.Session) error {
	want := map[string]message.Session{}
	for _, s := range others {
		if s.Name != "" && s.Name != p.cfg.Name {
			want[originKey(s)] = s
		}
	}
	p.al.mu.Lock()
	var drop []*alias
	for key, al := range p.al.byKey {
		if s, ok := want[key]; !ok || s.Name != al.origin.Name {
			drop = append(drop, al)
			p.al.forget(key, al)
		}
	}
	var add []*alias
	for key, s := range want {
		if _, ok := p.al.byKey[key]; !ok {
			add = append(add, p.al.add(key, s, p.sessions, p.pid))
		}
	}
	p.al.mu.Unlock()
	for _, al := range drop {
		_ = os.Remove(al.path)
		p.log.Info("retired qwen alias", "name", al.origin.Name)
	}
	var firstErr error
	for _, al := range add {
		if err := p.writeAlias(al); err != nil {
			p.al.mu.Lock()
			p.al.forget(originKey(al.origin), al)
			p.al.mu.Unlock()
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		p.log.Info("published qwen alias", "name", al.origin.Name, "for", al.origin.Address)
	}
	return firstErr
}

// add makes the alias of s, listed under key, known to the inbox (before
// its record is written); the caller holds mu.
func (a *aliases) add(key string, s message.Session, dir string, pid int) *alias {
	al := &alias{origin: s, sid: uuid.NewString(), path: filepath.Join(dir, RecordFileName(pid, NewSuffix()))}
	a.byKey[key], a.bySID[al.sid], a.paths[al.path] = al, al, true
	return al
}

// forget drops al, listed under key, from every index; the caller holds mu.
func (a *aliases) forget(key string, al *alias) {
	if a.byKey[key] == al {
		delete(a.byKey, key)
	}
	if a.bySID[al.sid] == al {
		a.retired.Put(al.sid, al)
	}
	delete(a.bySID, al.sid)
	delete(a.paths, al.path)
}

// writeAlias writes al's record at al.path.
func (p *Leg) writeAlias(al *alias) error {
	procStart, _ := ProcStartToken(p.pid)
	ns, err := uds.PidNamespace(p.pid)
	if err != nil {
		return err
	}
	s := al.origin
	rec := Record{
		PID: p.pid, ProcStart: procStart, PidNS: ns, SessionID: al.sid, Cwd: s.Cwd, Name: s.Name,
		StartedAt: p.clk.Now().UnixMilli(), Kind: KindAlias, IPCPath: p.socketPath, IPCToken: p.token,
	}
	b, err := rec.Marshal()
	if err != nil {
		return err
	}
	if err := safefile.CreateExclusive(al.path, b); err != nil {
		return err
	}
	if p.testHookAliasWritten != nil {
		p.testHookAliasWritten(al.path)
	}
	return nil
}

func (p *Leg) removeAliases() {
	p.al.mu.Lock()
	defer p.al.mu.Unlock()
	for _, al := range p.al.byKey {
		_ = os.Remove(al.path)
	}
	p.al.byKey, p.al.bySID, p.al.paths = map[string]*alias{}, map[string]*alias{}, map[string]bool{}
}

// SendAs sends m to a Qwen session on behalf of sender, a session of
// another leg: the frame names sender, and comes from our inbox, where the
// receiver's answer by name reaches sender's alias.
func (p *Leg) SendAs(ctx context.Context, sender message.Session, m message.Message) (message.Receipt, error) {
	if m.FromName == "" {
		m.FromName = sender.Name
	}
	p.ensureAlias(sender)
	return p.Send(ctx, m)
}

// ensureAlias publishes sender's alias now when no sync has yet (a session
// that just joined): the receiver may answer it by name before the next
// sync, and finds no such session without the record. The next sync keeps
// it while sender is listed, and removes it otherwise.
func (p *Leg) ensureAlias(s message.Session) {
	if s.Name == "" || s.Name == p.cfg.Name {
		return
	}
	key := originKey(s)
	p.al.mu.Lock()
	if _, ok := p.al.byKey[key]; ok {
		p.al.mu.Unlock()
		return
	}
	al := p.al.add(key, s, p.sessions, p.pid)
	p.al.mu.Unlock()
	if err := p.writeAlias(al); err != nil {
		p.al.mu.Lock()
		p.al.forget(key, al)
		p.al.mu.Unlock()
		p.log.Warn("publishing a sender's qwen alias failed", "name", s.Name, "err", err)
		return
	}
	p.al.mu.Lock()
	dropped := p.al.byKey[key] != al // a sync between add and the write let it go
	p.al.mu.Unlock()
	if dropped {
		_ = os.Remove(al.path)
		return
	}
	p.log.Info("published qwen alias", "name", s.Name, "for", s.Address)
}

// Relay tells the Qwen sender of in, which came to one of our aliases,
// what the session behind the alias did with it.
func (p *Leg) Relay(_ context.Context, in message.Message, rc message.Receipt) {
	r, ok := p.al.reply(in.ID)
	if !ok || r.from == "" {
		return
	}
	st := rc.Status
	if st == message.StatusFailed {
		st = message.StatusExpired // Qwen has no "failed": unsent, re-send later
	}
	ws, ok := WireStatusOf(st)
	if !ok {
		return
	}
	f := NewStatusFrame(ws, in.ID, p.socketPath)
	if ws == StatusDropped {
		if dr := rc.DropReason; IsWireDrop(dr) {
			f = NewDropFrame(in.ID, p.socketPath, dr, nil)
		}
	}
	p.dial(r.from, uds.Holder{PID: r.pid}, r.token, f)
}

// Aliases lists the published alias records, each with the address of the
// session it stands for. They share the gateway's inbox and are told apart
// by their session id.
func (p *Leg) Aliases() []message.Session {
	p.al.mu.Lock()
	defer p.al.mu.Unlock()
	out := make([]message.Session, 0, len(p.al.byKey))
	for _, al := range p.al.byKey {
		out = append(out, message.Session{
			Address: addressing.UDS(p.socketPath), Protocol: message.ProtocolQwen, Name: al.origin.Name,
			Ref: addressing.Ref(al.sid), SessionID: al.sid, PID: os.Getpid(), Kind: KindAlias,
			Reachable: true, AliasOf: al.origin.Address,
		})
	}
	return out
}
