package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/message"
)

// The demo sessions' names: they say what they are in every listing.
const (
	ClaudeName = "demo-claude"
	QwenName   = "demo-qwen"
)

// NameOf is the demo session's name for a protocol ("" for another).
func NameOf(p message.Protocol) string {
	switch p {
	case message.ProtocolClaude:
		return ClaudeName
	case message.ProtocolQwen:
		return QwenName
	}
	return ""
}

// SessionConfig sets up one demo session.
type SessionConfig struct {
	Protocol message.Protocol // claude or qwen
	Name     string           // default NameOf(Protocol)
	Getenv   func(string) string
	Version  string    // written into the Claude registry entry
	Out      io.Writer // what it hears and answers, one line each
	JSON     bool      // print each Line as JSON
	// Registered, when set, is called once the session is registered and
	// served, before the first message is read.
	Registered func(address string)
}

// leg is what a demo session needs of a local leg's peer.
type leg interface {
	Run(ctx context.Context, out chan<- message.Event) error
	Send(ctx context.Context, m message.Message) (message.Receipt, error)
	Sessions(ctx context.Context) ([]message.Session, error)
}

// session is one running demo session.
type session struct {
	name  string
	proto message.Protocol
	leg   leg
	out   io.Writer
	json  bool
	mu    sync.Mutex // serialises lines on out
}

// sendTimeout bounds one answer: a resolve and a write.
const sendTimeout = 10 * time.Second

// RunSession registers a demo session, answers what it is sent until ctx
// ends, then deregisters (registry entry or record, key file, socket).
func RunSession(ctx context.Context, cfg SessionConfig) error {
	if cfg.Name == "" {
		cfg.Name = NameOf(cfg.Protocol)
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	l, addr, err := register(cfg)
	if err != nil {
		return err
	}
	s := &session{name: cfg.Name, proto: cfg.Protocol, leg: l, out: cfg.Out, json: cfg.JSON}
	// The legs wait for room rather than drop (their own admission turns a
	// flood away first), so a small buffer only smooths bursts.
	events := make(chan message.Event, 64)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- l.Run(runCtx, events) }()
	if cfg.Registered != nil {
		cfg.Registered(addr)
	}
	for {
		select {
		case ev := <-events:
			s.handle(runCtx, ev)
		case err := <-ran:
			return err
		}
	}
}

// register makes the leg's peer under the demo's name, in the directories
// a real session of that protocol (and `gateway serve`) would use.
func register(cfg SessionConfig) (leg, string, error) {
	switch cfg.Protocol {
	case message.ProtocolClaude:
		dir := cfg.Getenv("CLAUDE_CONFIG_DIR")
		if dir == "" {
			d, err := claude.ConfigDir()
			if err != nil {
				return nil, "", err
			}
			dir = d
		}
		// Accept: a demo has nobody to release a held message.
		p, err := claude.Register(claude.Config{Name: cfg.Name, ConfigDir: dir,
			RuntimeDir: cfg.Getenv("XDG_RUNTIME_DIR"), Version: cfg.Version, Inbound: claude.PolicyAccept,
			Kind: "interactive"})
		if err != nil {
			return nil, "", fmt.Errorf("registering %s: %w", cfg.Name, err)
		}
		return p, p.Address(), nil
	case message.ProtocolQwen:
		home := cfg.Getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		cwd, _ := os.Getwd()
		tmp := qwen.NodeTmpDir(cfg.Getenv)
		p, err := qwen.Register(qwen.Config{Name: cfg.Name,
			Home: qwen.HomeDir(cfg.Getenv("QWEN_HOME"), home, cwd, tmp), RuntimeDir: cfg.Getenv("XDG_RUNTIME_DIR"),
			TmpDir: tmp, Inbound: qwen.PolicyAccept})
		if err != nil {
			return nil, "", fmt.Errorf("registering %s: %w", cfg.Name, err)
		}
		return p, addressing.UDS(p.SocketPath()), nil
	}
	return nil, "", fmt.Errorf("demo sessions speak claude or qwen, not %q", cfg.Protocol)
}

// Line is one thing a demo session did, as it prints it: a line of text,
// or with JSON a JSON object.
type Line struct {
	Session string `json:"session"`
	Event   string `json:"event"` // heard, sent, not_sent, receipt
	Peer    string `json:"peer,omitempty"`
	Text    string `json:"text,omitempty"`
	ID      string `json:"id,omitempty"`
	Status  string `json:"status,omitempty"`
}

func (s *session) print(l Line) {
	l.Session = s.name
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.json {
		b, _ := json.Marshal(l)
		fmt.Fprintf(s.out, "%s\n", b)
		return
	}
	// Quoted: a body is another process's text, never terminal control.
	switch l.Event {
	case "heard":
		fmt.Fprintf(s.out, "%-12s <- %s: %q\n", s.name, printable(l.Peer), l.Text)
	case "sent":
		fmt.Fprintf(s.out, "%-12s -> %s: %q (%s)\n", s.name, printable(l.Peer), l.Text, short(l.ID))
	case "not_sent":
		fmt.Fprintf(s.out, "%-12s -> %s: not sent: %s\n", s.name, printable(l.Peer), printable(l.Text))
	case "receipt":
		fmt.Fprintf(s.out, "%-12s    receipt %s: %s %q\n", s.name, short(l.ID), l.Status, l.Text)
	}
}

// handle answers a message and prints receipts; other events are the
// gateway's business.
func (s *session) handle(ctx context.Context, ev message.Event) {
	switch {
	case ev.Type == message.EventMessage && ev.Message != nil:
		m := ev.Message
		from := m.FromName
		if from == "" {
			from = m.From
		}
		s.print(Line{Event: "heard", Peer: from, Text: clip(m.Body), ID: m.ID})
		r := respond(s.name, m.Body)
		if r.ToName != "" {
			s.send(ctx, r.ToName, "", r.Text)
		}
		if r.Answer != "" {
			s.send(ctx, m.FromName, m.From, r.Answer)
		}
	case ev.Type == message.EventReceipt && ev.Receipt != nil:
		rc := ev.Receipt
		s.print(Line{Event: "receipt", ID: rc.MsgID, Status: rc.Status.String(), Text: clip(rc.Reason)})
	}
}

// send writes text to the session named name, resolved in this leg's roster
// as a real session resolves SendMessage's "to"; fallback (the sender's
// address) serves a sender whose name does not resolve.
func (s *session) send(ctx context.Context, name, fallback, text string) {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	m := message.Message{ID: uuid.NewString(), FromName: s.name, Body: text, Mode: message.ModePrompting}
	to, err := s.resolve(ctx, name)
	switch {
	case err == nil:
		m.To, m.ToName, m.ToPID, m.ToSessionID = to.Address, to.Name, to.PID, to.SessionID
	case fallback != "":
		m.To, m.ToName = fallback, name
	default:
		s.print(Line{Event: "not_sent", Peer: name, Text: err.Error()})
		return
	}
	if _, err := s.leg.Send(ctx, m); err != nil {
		s.print(Line{Event: "not_sent", Peer: name, Text: err.Error(), ID: m.ID})
		return
	}
	s.print(Line{Event: "sent", Peer: m.ToName, Text: clip(text), ID: m.ID})
}

// resolve finds name in the roster by the addressing rules (exact name,
// then case-insensitive, "name [ref]" for twins).
func (s *session) resolve(ctx context.Context, name string) (message.Session, error) {
	if name == "" {
		return message.Session{}, errors.New("the sender gave no name")
	}
	a, err := addressing.Parse(name)
	if err != nil {
		return message.Session{}, err
	}
	ss, err := s.leg.Sessions(ctx)
	if err != nil {
		return message.Session{}, err
	}
	cands := make([]addressing.Candidate, 0, len(ss))
	listed := make([]message.Session, 0, len(ss))
	for _, x := range ss {
		ca, err := addressing.Parse(x.Address)
		if err != nil {
			continue
		}
		cands = append(cands, addressing.Candidate{Address: ca, Name: x.Name, SessionID: x.SessionID,
			Protocol: string(x.Protocol), NativeRef: x.NativeRef})
		listed = append(listed, x)
	}
	c, err := addressing.Resolve(a, cands)
	if err != nil {
		return message.Session{}, err
	}
	for i, x := range cands {
		if x == c {
			return listed[i], nil
		}
	}
	return message.Session{}, fmt.Errorf("%s is not a session of this protocol", name)
}

// reply is what a demo session does with a message.
type reply struct {
	Answer string // to the sender; "" for none
	ToName string // a message to pass on, to this name
	Text   string
}

// maxEcho bounds how much of a body an answer repeats.
const maxEcho = 200

// respond decides a demo's reply to body: "ask NAME TEXT" passes TEXT on to
// NAME (unless TEXT is an ask itself) and says so; a demo's own answer is printed, never answered (two
// demos would otherwise answer each other for ever); anything else is
// echoed back.
func respond(self, body string) reply {
	if isAnswer(body) {
		return reply{}
	}
	if rest, ok := strings.CutPrefix(body, "ask "); ok {
		name, text, _ := strings.Cut(strings.TrimSpace(rest), " ")
		text = strings.TrimSpace(text)
		// A name longer than any echo is no session's: said back whole, it
		// would grow the answer with the message.
		if name == "" || text == "" || len(name) > maxEcho {
			return reply{Answer: self + " got: " + clip(body) + " (try: ask NAME TEXT)"}
		}
		// One hop only: "ask a ask b ask a ..." would bounce between the
		// demos once per word.
		if strings.HasPrefix(text, "ask ") {
			return reply{Answer: self + " got: " + clip(body) + " (a demo passes on no ask)"}
		}
		return reply{Answer: self + " asked " + name + ": " + clip(text), ToName: name, Text: clip(text)}
	}
	return reply{Answer: self + " got: " + clip(body)}
}

// isAnswer reports whether body is a demo's answer: "demo-... got: " or
// "demo-... asked NAME: ".
func isAnswer(body string) bool {
	who, rest, ok := strings.Cut(body, " ")
	if !ok || !strings.HasPrefix(who, "demo-") {
		return false
	}
	return strings.HasPrefix(rest, "got: ") || strings.HasPrefix(rest, "asked ")
}

// clip cuts s to maxEcho runes and an ellipsis.
func clip(s string) string { return bounded.Clip(s, maxEcho+1) }

// printable is s, or s quoted when it holds anything a terminal would not
// print as text.
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// short is the first 8 characters of an id, as listings show it.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
