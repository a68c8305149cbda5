package remotews

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/message"
)

// API is the REST surface the remote leg uses. cmd/gateway adapts
// *sessionsapi.Client to it, picking the v1 (/v1/sessions) or v2
// (/v1/code/sessions) paths to match the live transport.
type API interface {
	History
	// ListSessions lists the account's remote sessions.
	ListSessions(ctx context.Context) ([]RemoteSession, error)
	// Post posts events to a session. Every event carries a uuid that stays
	// the same across retries, so the server can drop a repeat.
	Post(ctx context.Context, sessionID string, events ...json.RawMessage) error
	// StreamHeader gives the headers of a WebSocket dial or SSE request.
	StreamHeader(ctx context.Context) (http.Header, error)
}

// RemoteSession is a remote session as the REST list shows it.
type RemoteSession struct {
	ID      string
	Title   string
	Status  string // active, idle, archived
	Created time.Time
}

// ReplyMode is what of a remote answer a local sender gets.
type ReplyMode string

const (
	ReplyResult    ReplyMode = "result"
	ReplyAssistant ReplyMode = "assistant"
)

// FollowAll follows every session the account lists.
const FollowAll = "all"

// LegConfig configures the remote leg.
type LegConfig struct {
	API     API
	BaseURL string
	OrgUUID string
	// Transport is the live transport of every followed session.
	Transport Transport
	// Follow lists the session ids kept live, or FollowAll.
	Follow []string
	// Aliases fixes the alias name of sessions by id (serve
	// --remote-alias ID=NAME); others get one derived from their title.
	Aliases map[string]string
	// Reply says what of a remote session's answer goes back to a local
	// sender: ReplyResult (default) its turn's final result text,
	// ReplyAssistant each finished assistant message as it streams.
	Reply ReplyMode
	// Tune adjusts each session's stream config (timeouts, backoff) after
	// the leg filled it from NewConfig.
	Tune func(*Config)
	// ListInterval is how often the session list is refreshed (and, with
	// FollowAll, new sessions followed); default 30 s.
	ListInterval time.Duration
	// Buffer is each stream's update queue; default 16. The stream blocks
	// when it is full, so more would only cost memory per idle session.
	Buffer int
	Logger *slog.Logger
	Now    func() time.Time
}

// Leg is the claude.ai remote leg: it keeps the followed sessions live,
// turns what they say into events (remote output, permission prompts,
// link state), posts messages and permission answers over REST.
type Leg struct {
	cfg LegConfig
	log *slog.Logger

	mu       sync.Mutex
	listed   []RemoteSession
	listedAt time.Time
	listErr  error
	links    map[string]*follow // followed session id -> its stream
	names    map[string]string  // session id -> alias name, from the last listing

	posted *bounded.Map[string, postedMsg] // event uuid we posted -> what it carried, until echoed
}

// follow is one followed session.
type follow struct {
	stream *Stream
	cancel context.CancelFunc
	done   chan struct{}
	link   Link
	// prompts are the can_use_tool requests seen and not settled, by
	// request id, so a cancel can say which prompt it withdraws.
	prompts map[string]message.PermissionRequest
	// assistant holds the merged copy of each streamed message.
	assistant map[string]Assistant
	// err is why the stream ended; set before done is closed.
	err error
	// Turn tracking, to send a remote answer back to the local senders it
	// answers: waiting are senders whose message the session has (its echo
	// came) but whose turn has not begun; current are those of the running
	// turn, which began with its first assistant message.
	waiting, current []replyTo
	turnActive       bool
}

// replyTo is a local sender waiting for a remote session's answer.
type replyTo struct {
	msgID       string
	from        string // the sender's address
	fromName    string
	fromSession string
	hopChain    []string
	mode        message.Mode
}

// postedMsg is what a user event we posted carried.
type postedMsg struct {
	msgID string
	reply *replyTo // nil unless a local session sent it through the bridge
}

// retryable says the stream has ended by giving up on a failure that may
// pass (not a refusal of credentials or of the session).
func (f *follow) retryable() bool {
	var perm *PermanentError
	return f.ended() && f.err != nil && !errors.As(f.err, &perm)
}

// ended says the follow's goroutines are done.
func (f *follow) ended() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

const (
	maxPosted  = 4096
	maxWaiting = 64 // local senders waiting for one remote session's answer
)

// NewLeg checks cfg and builds the leg; Run starts following.
func NewLeg(cfg LegConfig) (*Leg, error) {
	if cfg.API == nil {
		return nil, errors.New("remote leg: no API client")
	}
	if cfg.BaseURL == "" {
		return nil, errors.New("remote leg: no base URL")
	}
	switch cfg.Transport {
	case "":
		cfg.Transport = TransportWS
	case TransportWS, TransportSSE:
	default:
		return nil, fmt.Errorf("remote leg: unknown transport %q (want ws or sse)", cfg.Transport)
	}
	for _, id := range cfg.Follow {
		if id != FollowAll && !ValidSessionID(id) {
			return nil, fmt.Errorf("remote leg: %q is not a session id", id)
		}
	}
	if cfg.ListInterval <= 0 {
		cfg.ListInterval = 30 * time.Second
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = 16
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	switch cfg.Reply {
	case "":
		cfg.Reply = ReplyResult
	case ReplyResult, ReplyAssistant:
	default:
		return nil, fmt.Errorf("remote leg: reply mode %q (want result or assistant)", cfg.Reply)
	}
	for id, name := range cfg.Aliases {
		if !ValidSessionID(id) || !validAliasName(name) {
			return nil, fmt.Errorf("remote leg: alias %s=%s: want SESSION_ID=NAME with a name of letters, digits, '-', '_' or '.'", id, name)
		}
	}
	return &Leg{cfg: cfg, log: cfg.Logger, links: map[string]*follow{}, posted: bounded.NewMap[string, postedMsg](maxPosted), names: map[string]string{}}, nil
}

// ValidSessionID accepts what may stand for a session id in a URL path
// segment: letters, digits, '_' and '-', at most 200 of them.
func ValidSessionID(id string) bool {
	if id == "" || len(id) > 200 {
		return false
	}
	for _, r := range id {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// Name is the leg's protocol.
func (l *Leg) Name() message.Protocol { return message.ProtocolRemote }

// Claims takes every bridge: address, listed or not: posting to a session
// needs no subscription.
func (l *Leg) Claims(a addressing.Address) bool {
	return a.Kind == addressing.KindBridge && ValidSessionID(a.ID)
}

func (l *Leg) followsAll() bool { return slices.Contains(l.cfg.Follow, FollowAll) }

func (l *Leg) follows(id string) bool {
	return l.followsAll() || slices.Contains(l.cfg.Follow, id)
}

// Sessions lists the remote sessions: every listed one when following all,
// else the followed ones. The list is refreshed by Run; before the first
// refresh it is fetched here.
func (l *Leg) Sessions(ctx context.Context) ([]message.Session, error) {
	l.mu.Lock()
	listed, at := l.listed, l.listedAt
	l.mu.Unlock()
	if at.IsZero() {
		var err error
		if listed, err = l.refresh(ctx); err != nil {
			return nil, err
		}
	}
	out := make([]message.Session, 0, len(listed))
	for _, rs := range listed {
		if !l.follows(rs.ID) {
			continue
		}
		out = append(out, l.session(rs))
	}
	// A followed id the list does not show (yet) is still reachable.
	for _, id := range l.cfg.Follow {
		if id != FollowAll && !slices.ContainsFunc(listed, func(rs RemoteSession) bool { return rs.ID == id }) {
			out = append(out, l.session(RemoteSession{ID: id}))
		}
	}
	return out, nil
}

func (l *Leg) session(rs RemoteSession) message.Session {
	s := message.Session{
		Address:   addressing.Address{Kind: addressing.KindBridge, ID: rs.ID}.String(),
		Protocol:  message.ProtocolRemote,
		Name:      l.aliasName(rs.ID),
		Title:     rs.Title,
		Ref:       addressing.Ref(rs.ID),
		SessionID: rs.ID,
		Kind:      "remote",
		Status:    rs.Status,
		Reachable: rs.Status != "archived",
		StartedAt: rs.Created,
	}
	l.mu.Lock()
	if f, ok := l.links[rs.ID]; ok {
		s.Kind = "remote-live"
		if f.link.State == LinkGaveUp {
			s.Kind = "remote"
		}
	}
	l.mu.Unlock()
	return s
}

func (l *Leg) refresh(ctx context.Context) ([]RemoteSession, error) {
	listed, err := l.cfg.API.ListSessions(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.listErr = err
	if err != nil {
		return nil, fmt.Errorf("remote leg: list sessions: %w", err)
	}
	l.listed, l.listedAt = listed, l.cfg.Now()
	l.names = aliasNames(listed, l.cfg.Aliases)
	return listed, nil
}

// Ready says whether the session list could be fetched and whether any
// followed session's stream gave up.
func (l *Leg) Ready() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.listErr != nil {
		return l.listErr
	}
	if l.listedAt.IsZero() {
		return errors.New("session list not fetched yet")
	}
	var gaveUp []string
	for id, f := range l.links {
		if f.link.State == LinkGaveUp {
			gaveUp = append(gaveUp, id)
		}
	}
	if len(gaveUp) > 0 {
		slices.Sort(gaveUp)
		return fmt.Errorf("live stream gave up for %s", strings.Join(gaveUp, ", "))
	}
	return nil
}

// Run follows the configured sessions until ctx ends.
func (l *Leg) Run(ctx context.Context, in chan<- message.Event) error {
	var wg sync.WaitGroup
	defer func() {
		l.mu.Lock()
		for _, f := range l.links {
			f.cancel()
		}
		l.mu.Unlock()
		wg.Wait()
	}()
	t := time.NewTicker(l.cfg.ListInterval)
	defer t.Stop()
	for {
		listed, err := l.refresh(ctx)
		if err != nil && ctx.Err() == nil {
			l.log.Warn("listing remote sessions failed", "err", err)
		}
		want := map[string]bool{}
		for _, id := range l.cfg.Follow {
			if id != FollowAll {
				want[id] = true
			}
		}
		if l.followsAll() {
			for _, rs := range listed {
				if rs.Status != "archived" {
					want[rs.ID] = true
				}
			}
		}
		l.mu.Lock()
		if err == nil {
			// With FollowAll, a session gone from the list (archived,
			// deleted) is no longer followed, nor counted by Ready.
			for id, f := range l.links {
				if !want[id] {
					f.cancel()
					delete(l.links, id)
				}
			}
		}
		for id := range want {
			if f, ok := l.links[id]; ok && f.ended() && (err == nil || f.retryable()) {
				// It gave up: try afresh. After a refusal (401, 404) only
				// once the list works again, so a rotated token file or a
				// restored session brings it back.
				delete(l.links, id)
			}
			if _, ok := l.links[id]; !ok {
				l.startLocked(ctx, &wg, id, in)
			}
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// startLocked starts following id; l.mu must be held.
func (l *Leg) startLocked(ctx context.Context, wg *sync.WaitGroup, id string, in chan<- message.Event) {
	fctx, cancel := context.WithCancel(ctx)
	f := &follow{cancel: cancel, done: make(chan struct{}),
		prompts: map[string]message.PermissionRequest{}, assistant: map[string]Assistant{}}
	l.links[id] = f
	updates := make(chan Update, l.cfg.Buffer)
	runDone := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(updates)
		defer close(runDone)
		f.err = l.run(fctx, id, f, updates, in)
		if f.err != nil && fctx.Err() == nil {
			l.log.Warn("remote session stream ended", "session", id, "err", f.err)
			l.onLink(fctx, id, f, Link{State: LinkGaveUp, Err: f.err}, in)
		}
	}()
	go func() {
		defer wg.Done()
		defer close(f.done)
		for u := range updates {
			for _, ev := range l.translate(id, f, u) {
				emit(fctx, in, ev)
			}
		}
		<-runDone // f.err is set
	}()
}

// run catches up with the session's history, then keeps it live.
func (l *Leg) run(ctx context.Context, id string, f *follow, updates chan<- Update, in chan<- message.Event) error {
	sc := NewConfig(l.cfg.BaseURL, l.cfg.OrgUUID, id)
	sc.Transport, sc.Header, sc.History = l.cfg.Transport, l.cfg.API.StreamHeader, l.cfg.API
	sc.Logger = l.log.With("session", id)
	if l.cfg.Tune != nil {
		l.cfg.Tune(&sc)
	}
	afterID, afterSeq, seen, err := l.backlog(ctx, id, f, in)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		// The stream then delivers the whole history itself.
		l.log.Warn("reading the session's history failed; following it from its start", "session", id, "err", err)
	} else {
		sc.ResumeAfterID, sc.ResumeAfterSeq, sc.Seen = afterID, afterSeq, seen
	}
	st, err := NewStream(sc)
	if err != nil {
		return err
	}
	l.mu.Lock()
	f.stream = st
	l.mu.Unlock()
	return st.Run(ctx, updates, func(k Link) { l.onLink(ctx, id, f, k, in) })
}

// backlog pages through the session's history up to now. Its events are
// not published (a session may have thousands): only the permission prompts
// still open at its end are, so a prompt raised before the gateway started
// can be answered. It returns the resume point for the live stream and, on
// the WebSocket, the uuids read, so the stream need not read them again.
func (l *Leg) backlog(ctx context.Context, id string, f *follow, in chan<- message.Event) (string, uint64, []string, error) {
	var (
		afterID  string
		afterSeq uint64
		seen     []string // WebSocket uuids, for the stream's de-dup window
		n        int
	)
	for {
		var (
			page []json.RawMessage
			more bool
			err  error
		)
		if l.cfg.Transport == TransportSSE {
			page, more, err = l.cfg.API.CodeEventsAfter(ctx, id, afterSeq)
		} else {
			page, more, err = l.cfg.API.EventsAfter(ctx, id, afterID)
		}
		if err != nil {
			return "", 0, nil, err
		}
		for _, raw := range page {
			var m Message
			if l.cfg.Transport == TransportSSE {
				v, err := DecodeV2(Event{Data: string(raw)})
				if err != nil {
					return "", 0, nil, fmt.Errorf("history event after %d: %w", afterSeq, err)
				}
				m, afterSeq = v.Message, v.SequenceNum
			} else {
				if m, err = Decode(raw); err != nil {
					return "", 0, nil, fmt.Errorf("history event after %q: %w", afterID, err)
				}
				if m.UUID != "" {
					afterID = m.UUID
					seen = append(seen, m.UUID)
					if len(seen) > 2*DefaultDedupWindow { // keep the newest; the stream takes its window's worth
						seen = append(seen[:0], seen[len(seen)-DefaultDedupWindow:]...)
					}
				}
			}
			n++
			l.track(id, f, m, l.cfg.Now())
		}
		if !more || len(page) == 0 {
			break
		}
	}
	l.log.Debug("caught up with the session's history", "session", id, "events", n, "open_prompts", len(f.prompts))
	for _, req := range f.prompts {
		emit(ctx, in, message.Event{Type: message.EventPermission, Leg: message.ProtocolRemote, Time: l.cfg.Now(), Permission: &req})
	}
	return afterID, afterSeq, seen, nil
}

// track keeps f.prompts current with one history event.
func (l *Leg) track(id string, f *follow, m Message, now time.Time) {
	addr := addressing.Address{Kind: addressing.KindBridge, ID: id}.String()
	switch m.Kind {
	case KindControlRequest:
		if m.ControlRequest.Subtype == SubtypeCanUseTool {
			f.prompts[m.ControlRequest.RequestID] = l.permission(id, addr, m.ControlRequest, now)
		}
	case KindControlCancelRequest:
		delete(f.prompts, m.Cancel.RequestID)
	case KindControlResponse:
		if cr := m.ControlResponse; cr != nil && cr.Decision != nil {
			delete(f.prompts, cr.RequestID)
		}
	}
}

func emit(ctx context.Context, in chan<- message.Event, ev message.Event) {
	select {
	case in <- ev:
	case <-ctx.Done():
	}
}

func (l *Leg) onLink(ctx context.Context, id string, f *follow, k Link, in chan<- message.Event) {
	l.mu.Lock()
	f.link = k
	l.mu.Unlock()
	ml := &message.Link{SessionID: id, State: k.State.String(), Attempt: k.Attempt}
	if k.Err != nil {
		ml.Error = k.Err.Error()
	}
	emit(ctx, in, message.Event{Type: message.EventLink, Leg: message.ProtocolRemote, Time: l.cfg.Now(), Link: ml})
}

// translate turns one update of session id into router events. It runs on
// the session's own goroutine, which alone touches f's maps.
func (l *Leg) translate(id string, f *follow, u Update) []message.Event {
	m := u.Message
	now := l.cfg.Now()
	addr := addressing.Address{Kind: addressing.KindBridge, ID: id}.String()
	re := &message.RemoteEvent{SessionID: id, Address: addr, Kind: m.Type, UUID: m.UUID, Seq: u.Seq, Raw: m.Raw}
	if re.UUID == "" {
		re.UUID = u.EventID
	}
	remote := func() message.Event {
		return message.Event{Type: message.EventRemote, Leg: message.ProtocolRemote, Time: now, Remote: re}
	}
	switch m.Kind {
	case KindKeepAlive:
		return nil
	case KindAssistant:
		if !f.turnActive {
			// The first assistant message begins a turn: it answers the
			// messages the session had by then.
			f.turnActive, f.current, f.waiting = true, f.waiting, nil
		}
		a := *m.Assistant
		if prev, ok := f.assistant[a.ID]; ok && a.ID != "" {
			a = MergeAssistant(prev, a)
		}
		if a.StopReason != "" {
			delete(f.assistant, a.ID)
		} else if a.ID != "" {
			if len(f.assistant) >= 64 { // a stream that never finishes its messages
				clear(f.assistant)
			}
			f.assistant[a.ID] = a
		}
		re.MessageID, re.Final, re.Text = a.ID, a.StopReason != "", a.Content.Text()
		if re.Final && l.cfg.Reply == ReplyAssistant && len(f.current) > 0 && m.ParentToolUseID == "" {
			return append([]message.Event{remote()}, l.replies(id, f.current, re.Text, now)...)
		}
	case KindUser:
		re.Text = m.User.Content.Text()
		if ev, reply, ok := l.echoed(re.UUID, now); ok {
			if reply != nil {
				if len(f.waiting) >= maxWaiting { // answers that never come
					f.waiting = f.waiting[1:]
				}
				f.waiting = append(f.waiting, *reply)
			}
			return []message.Event{remote(), ev}
		}
	case KindResult:
		re.Final, re.Text = true, m.Result.Result
		to := f.current
		if !f.turnActive {
			to = f.waiting // a turn that ended without an assistant message
			f.waiting = nil
		}
		f.turnActive, f.current = false, nil
		evs := []message.Event{remote()}
		if l.cfg.Reply == ReplyResult {
			text := m.Result.Result
			if m.Result.IsError && text == "" {
				text = "(the remote session's turn ended with " + m.Result.Subtype + ")"
			}
			evs = append(evs, l.replies(id, to, text, now)...)
		}
		return evs
	case KindControlRequest:
		cr := m.ControlRequest
		if cr.Subtype != SubtypeCanUseTool {
			break
		}
		req := l.permission(id, addr, cr, now)
		f.prompts[cr.RequestID] = req
		return []message.Event{remote(), {Type: message.EventPermission, Leg: message.ProtocolRemote, Time: now, Permission: &req}}
	case KindControlCancelRequest:
		req, ok := f.prompts[m.Cancel.RequestID]
		if !ok {
			req = message.PermissionRequest{SessionID: id, Address: addr, Leg: message.ProtocolRemote, RequestID: m.Cancel.RequestID}
		}
		delete(f.prompts, m.Cancel.RequestID)
		req.State = message.PermissionCancelled
		return []message.Event{remote(), {Type: message.EventPermission, Leg: message.ProtocolRemote, Time: now, Permission: &req}}
	case KindControlResponse:
		// The server echoes posted answers on the stream. Ours the router
		// settles itself; one from elsewhere (claude.ai, another client)
		// settles the prompt here.
		cr := m.ControlResponse
		if cr != nil && cr.Initialize != nil {
			// The answer to our own initialize, on every (re)connect: its
			// pending prompts come as updates of their own.
			return nil
		}
		if cr == nil || cr.Decision == nil {
			break
		}
		req, ok := f.prompts[cr.RequestID]
		delete(f.prompts, cr.RequestID)
		if !ok || re.UUID == answerUUID(id, cr.RequestID) {
			break
		}
		req.State = message.PermissionAnswered
		req.Answer = &message.PermissionAnswer{Behavior: message.Behavior(cr.Decision.Behavior), Message: cr.Decision.Message, By: "remote"}
		return []message.Event{remote(), {Type: message.EventPermission, Leg: message.ProtocolRemote, Time: now, Permission: &req}}
	}
	return []message.Event{remote()}
}

func (l *Leg) permission(id, addr string, cr *ControlRequest, now time.Time) message.PermissionRequest {
	req := message.PermissionRequest{
		SessionID: id, Address: addr, Leg: message.ProtocolRemote, RequestID: cr.RequestID,
		ToolName: cr.ToolName, ToolUseID: cr.ToolUseID, Description: cr.Description,
		Input: cr.Input, Created: now, State: message.PermissionPending,
	}
	if len(req.Input) == 0 {
		req.Input = json.RawMessage(`{}`)
	}
	if qs, err := cr.Questions(); err == nil {
		for _, q := range qs {
			mq := message.Question{Question: q.Question, Header: q.Header, MultiSelect: q.MultiSelect}
			for _, o := range q.Options {
				mq.Options = append(mq.Options, o.Label)
			}
			req.Questions = append(req.Questions, mq)
		}
	}
	return req
}

// echoed reports a delivered receipt when a user event we posted comes back
// on the live stream: the server stored it in the session's history.
func (l *Leg) echoed(eventUUID string, now time.Time) (message.Event, *replyTo, bool) {
	if eventUUID == "" {
		return message.Event{}, nil, false
	}
	pm, ok := l.posted.Take(eventUUID)
	if !ok {
		return message.Event{}, nil, false
	}
	rc := &message.Receipt{MsgID: pm.msgID, Status: message.StatusDelivered, Detail: "in the session's history", Time: now}
	return message.Event{Type: message.EventReceipt, Leg: message.ProtocolRemote, Time: now, Receipt: rc}, pm.reply, true
}

// replies are the messages that carry text, an answer of session id, back
// to the local senders in to: from the session's alias, through the
// router's bridge (AliasOf names the sender to deliver to).
func (l *Leg) replies(id string, to []replyTo, text string, now time.Time) []message.Event {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	addr := addressing.Address{Kind: addressing.KindBridge, ID: id}.String()
	name := l.aliasName(id)
	var evs []message.Event
	for _, r := range to {
		if r.mode == message.ModeUnknown {
			r.mode = message.ModePrompting
		}
		m := &message.Message{
			ID: uuid.NewString(), From: addr, FromName: name, FromSession: id,
			To: r.from, ToName: r.fromName, ToSessionID: r.fromSession, AliasOf: r.from,
			// The answer carries the mode of the message it answers: the
			// remote session's own is not known here, and the receiver
			// already admitted a sender of that class.
			Body: text, Mode: r.mode, Attested: true, HopChain: r.hopChain,
			Protocol: message.ProtocolRemote, Time: now,
		}
		evs = append(evs, message.Event{Type: message.EventMessage, Leg: message.ProtocolRemote, Time: now, Message: m})
	}
	return evs
}

// eventNamespace makes event uuids from message ids, so a retried send of
// one message always posts the same uuid.
var eventNamespace = uuid.MustParse("6f0b7c1e-3d55-4f5e-9a57-2b0f4a8d9c11")

// EventUUID is the uuid of the user event that carries message id msgID.
func EventUUID(msgID string) string {
	if u, err := uuid.Parse(msgID); err == nil {
		return u.String()
	}
	return uuid.NewSHA1(eventNamespace, []byte("message:"+msgID)).String()
}

func targetID(m message.Message) (string, error) {
	if m.ToSessionID != "" {
		return m.ToSessionID, nil
	}
	a, err := addressing.Parse(m.To)
	if err != nil {
		return "", err
	}
	if a.Kind != addressing.KindBridge || !ValidSessionID(a.ID) {
		return "", fmt.Errorf("remote leg: %s is not a bridge: address", m.To)
	}
	return a.ID, nil
}

// Send posts m as a user event. The receipt says sent once the server
// accepted it; delivered follows when the event shows up on the session's
// live stream (followed sessions only).
func (l *Leg) Send(ctx context.Context, m message.Message) (message.Receipt, error) {
	id, err := targetID(m)
	if err != nil {
		return message.Receipt{}, err
	}
	evUUID := EventUUID(m.ID)
	ev, err := json.Marshal(map[string]any{
		"type":               "user",
		"uuid":               evUUID,
		"session_id":         id,
		"parent_tool_use_id": nil,
		"message":            map[string]any{"role": "user", "content": attributed(m)},
	})
	if err != nil {
		return message.Receipt{}, err
	}
	pm := postedMsg{msgID: m.ID}
	if m.From != "" {
		pm.reply = &replyTo{msgID: m.ID, from: m.From, fromName: m.FromName, fromSession: m.FromSession, hopChain: m.HopChain, mode: m.Mode}
	}
	l.posted.Put(evUUID, pm)
	now := l.cfg.Now()
	if err := l.cfg.API.Post(ctx, id, ev); err != nil {
		l.posted.Delete(evUUID)
		// The error too, so a caller that retries (the outbox) can tell a
		// refusal (sessionsapi.ErrNotFound, ...) from a passing failure.
		return message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: err.Error(), Time: now}, err
	}
	l.Wake(id) // a dormant stream comes back to hear the answer
	return message.Receipt{MsgID: m.ID, Status: message.StatusSent, Detail: "accepted by the server", Time: now}, nil
}

// attributed is the prompt text of m: a message a local session sent
// through the bridge says who sent it and that the answer goes back.
func attributed(m message.Message) string {
	if m.From == "" || m.FromName == "" {
		return m.Body
	}
	return fmt.Sprintf("Message from %s (another coding-agent session, through the gateway). "+
		"Your final answer to it is sent back to %s.\n\n%s", m.FromName, m.FromName, m.Body)
}

// answerNamespace makes the uuid of a permission answer from the prompt, so
// a retried answer is the same event.
var answerNamespace = uuid.MustParse("0c6f2b4a-8e1d-4b7a-a3c5-5d9e7f1a2b3c")

// answerUUID is the uuid of the answer to a prompt.
func answerUUID(sessionID, requestID string) string {
	return uuid.NewSHA1(answerNamespace, []byte(sessionID+"\x00"+requestID)).String()
}

// Answer posts a's control_response for req over HTTP, as seed 001 says
// answers travel (never over the WebSocket).
func (l *Leg) Answer(ctx context.Context, req message.PermissionRequest, a message.PermissionAnswer) error {
	ev, err := answerEvent(req, a)
	if err != nil {
		return err
	}
	return l.cfg.API.Post(ctx, req.SessionID, ev)
}

// answerEvent builds the control_response event answering req.
func answerEvent(req message.PermissionRequest, a message.PermissionAnswer) (json.RawMessage, error) {
	d := Decision{Behavior: string(a.Behavior), ToolUseID: req.ToolUseID, Message: a.Message}
	switch a.Behavior {
	case message.BehaviorAllow:
		in, err := updatedInput(req, a)
		if err != nil {
			return nil, err
		}
		d.UpdatedInput = in
	case message.BehaviorDeny:
		if d.Message == "" {
			d.Message = "denied through the gateway"
		}
	default:
		return nil, fmt.Errorf("remote leg: behavior %q is neither allow nor deny", a.Behavior)
	}
	if len(a.Rules) > 0 {
		dest := a.RuleDestination
		if dest == "" {
			dest = "localSettings"
		}
		u := PermissionUpdate{Type: "addRules", Behavior: string(a.Behavior), Destination: dest}
		for _, r := range a.Rules {
			u.Rules = append(u.Rules, Rule{ToolName: r.ToolName, RuleContent: r.RuleContent})
		}
		d.UpdatedPermissions = []PermissionUpdate{u}
	}
	inner, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"type": "control_response",
		"uuid": answerUUID(req.SessionID, req.RequestID),
		"response": map[string]any{
			"subtype":    "success",
			"request_id": req.RequestID,
			"response":   json.RawMessage(inner),
		},
	})
}

// updatedInput is the tool input an allow carries: the given replacement,
// else the original, with AskUserQuestion answers merged in (a string for
// a single-select question, a list for a multi-select one).
func updatedInput(req message.PermissionRequest, a message.PermissionAnswer) (json.RawMessage, error) {
	base := a.UpdatedInput
	if len(base) == 0 {
		base = req.Input
	}
	if len(a.Answers) == 0 {
		return base, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(base, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("remote leg: tool input is not a JSON object")
	}
	multi := map[string]bool{}
	for _, q := range req.Questions {
		multi[q.Question] = q.MultiSelect
	}
	answers := map[string]any{}
	for q, labels := range a.Answers {
		if multi[q] {
			answers[q] = labels
		} else if len(labels) == 1 {
			answers[q] = labels[0]
		} else {
			return nil, fmt.Errorf("remote leg: question %q takes one answer, got %d", q, len(labels))
		}
	}
	b, err := json.Marshal(answers)
	if err != nil {
		return nil, err
	}
	obj["answers"] = b
	return json.Marshal(obj)
}

// Control posts a control_request (interrupt, set_permission_mode,
// set_model) over HTTP.
func (l *Leg) Control(ctx context.Context, target message.Session, c message.Control) error {
	id := target.SessionID
	if id == "" {
		var err error
		if id, err = targetID(message.Message{To: target.Address}); err != nil {
			return err
		}
	}
	req := map[string]any{"subtype": string(c.Kind)}
	switch c.Kind {
	case message.ControlInterrupt:
	case message.ControlSetPermissionMode:
		if c.Mode == "" {
			return errors.New("remote leg: set_permission_mode needs a mode")
		}
		req["mode"] = c.Mode
	case message.ControlSetModel:
		if c.Model != "" {
			req["model"] = c.Model
		}
	default:
		return fmt.Errorf("remote leg: unknown control %q", c.Kind)
	}
	rid := fmt.Sprintf("%s-%d-%s", c.Kind, l.cfg.Now().UnixMilli(), uuid.NewString()[:8])
	ev, err := json.Marshal(map[string]any{"type": "control_request", "uuid": uuid.NewString(), "request_id": rid, "request": req})
	if err != nil {
		return err
	}
	return l.cfg.API.Post(ctx, id, ev)
}

// Wake leaves dormancy for a followed session, as when a message is sent
// to it.
func (l *Leg) Wake(id string) {
	l.mu.Lock()
	f, ok := l.links[id]
	var st *Stream
	if ok {
		st = f.stream
	}
	l.mu.Unlock()
	if st != nil {
		st.Wake()
	}
}
