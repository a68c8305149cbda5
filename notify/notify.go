package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// Kinds of notification. Prompt and held are always on; idle and turn are
// opt-in (--notify-on).
const (
	KindPrompt = "prompt"
	KindHeld   = "held"
	KindIdle   = "idle"
	KindTurn   = "turn"
)

// SignatureHeader carries "sha256=" and the hex HMAC-SHA256 of a webhook's
// body under the secret.
const SignatureHeader = "X-Gateway-Signature"

const (
	queueSize   = 256 // notifications waiting for one target; past it they are dropped and counted
	maxAttempts = 5
	maxActions  = 3 // ntfy shows at most three buttons
)

// Config wires a Notifier.
type Config struct {
	Targets []string // webhook URLs, ntfy://HOST/TOPIC, ntfy:http(s)://HOST/TOPIC
	Secret  []byte   // signs webhook bodies; empty sends them unsigned
	Kinds   []string // opt-in kinds beside prompt and held: idle, turn
	// BaseURL is the gateway's API as the phone reaches it, for action
	// links; empty sends no buttons.
	BaseURL string
	Decider Decider
	Links   *Links // nil for a random key
	Log     *slog.Logger
	Client  *http.Client
	// Backoff spaces a notification's tries; the zero Backoff waits 1 s
	// after the first, doubled after each further one.
	Backoff clock.Backoff
	Clock   clock.Clock // nil for the wall clock
}

// Notification is one message to people, the webhook's JSON body.
type Notification struct {
	Kind    string `json:"kind"`
	ID      string `json:"id"`
	Address string `json:"address,omitempty"`
	// Name and Source (prompts): the session's name, and where the prompt
	// came from (remote, hook, channel), so a local session's prompt reads
	// as one.
	Name     string         `json:"name,omitempty"`
	Source   string         `json:"source,omitempty"`
	Title    string         `json:"title"`
	Message  string         `json:"message"`
	Priority int            `json:"priority"` // ntfy's 1 (min) to 5 (max)
	Actions  []ActionButton `json:"actions,omitempty"`
	Time     time.Time      `json:"time"`
}

// ActionButton is one button: following URL acts once.
type ActionButton struct {
	Label string `json:"label"`
	URL   string `json:"url"`
}

type target struct {
	url  string
	ntfy bool
	root string // ntfy: the server's publish URL
	tpc  string // ntfy: the topic
}

// Notifier follows the router's events and delivers notifications.
type Notifier struct {
	cfg     Config
	links   *Links
	targets []target
	queues  []chan Notification // one per target: a dead target delays only its own
	drops   []atomic.Uint64     // per target, what its full queue turned away
	kinds   map[string]bool
	base    atomic.Pointer[func() string] // the link base when BaseURL is empty

	mu     sync.Mutex
	counts map[string]uint64

	// told remembers what was notified, so a prompt published again (a
	// session's stream reconnecting) notifies once; oldest forgotten first.
	told      map[string]bool
	toldOrder []string
}

const maxTold = 1024

// ParseTarget checks one --notify value.
func ParseTarget(raw string) (target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, fmt.Errorf("--notify %q: %w", raw, err)
	}
	switch {
	case u.Scheme == "ntfy" && u.Opaque != "":
		inner, err := url.Parse(u.Opaque)
		if err != nil || (inner.Scheme != "http" && inner.Scheme != "https") || inner.Host == "" {
			return target{}, fmt.Errorf("--notify %q: want ntfy:https://HOST/TOPIC", raw)
		}
		return ntfyTarget(raw, inner.Scheme+"://"+inner.Host, inner.Path)
	case u.Scheme == "ntfy":
		return ntfyTarget(raw, "https://"+u.Host, u.Path)
	case u.Scheme == "https" && strings.EqualFold(u.Host, "ntfy.sh"):
		// The public server's topic URL; another server's is ntfy:https://HOST/TOPIC.
		return ntfyTarget(raw, "https://"+u.Host, u.Path)
	case (u.Scheme == "http" || u.Scheme == "https") && u.Host != "":
		return target{url: raw}, nil
	}
	return target{}, fmt.Errorf("--notify %q: want an http(s) webhook URL, ntfy://HOST/TOPIC or ntfy:https://HOST/TOPIC", raw)
}

func ntfyTarget(raw, root, path string) (target, error) {
	topic := strings.Trim(path, "/")
	if topic == "" || strings.Contains(topic, "/") || root == "https://" {
		return target{}, fmt.Errorf("--notify %q: want one topic after the host", raw)
	}
	return target{url: raw, ntfy: true, root: root + "/", tpc: topic}, nil
}

// New checks the configuration.
func New(cfg Config) (*Notifier, error) {
	n := &Notifier{cfg: cfg, links: cfg.Links, kinds: map[string]bool{KindPrompt: true, KindHeld: true},
		counts: map[string]uint64{}, told: map[string]bool{}}
	for _, raw := range cfg.Targets {
		t, err := ParseTarget(raw)
		if err != nil {
			return nil, err
		}
		n.targets = append(n.targets, t)
		n.queues = append(n.queues, make(chan Notification, queueSize))
	}
	n.drops = make([]atomic.Uint64, len(n.targets))
	for _, k := range cfg.Kinds {
		if k != KindIdle && k != KindTurn {
			return nil, fmt.Errorf("--notify-on %q: want idle or turn", k)
		}
		n.kinds[k] = true
	}
	if n.links == nil {
		n.links = NewLinks(nil, nil)
	}
	if n.cfg.Log == nil {
		n.cfg.Log = slog.New(slog.DiscardHandler)
	}
	client := http.Client{Timeout: 10 * time.Second}
	if n.cfg.Client != nil {
		client = *n.cfg.Client
	}
	// A redirect is a failed delivery: following one would post the body,
	// its one-time links and its signature to wherever the target points.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	n.cfg.Client = &client
	if n.cfg.Backoff == (clock.Backoff{}) {
		n.cfg.Backoff = clock.Backoff{Initial: time.Second}
	}
	n.cfg.Backoff.MaxRetries = maxAttempts - 1
	n.cfg.Clock = clock.Or(n.cfg.Clock)
	n.cfg.BaseURL = strings.TrimSuffix(n.cfg.BaseURL, "/")
	return n, nil
}

func (n *Notifier) count(what string) {
	n.mu.Lock()
	n.counts[what]++
	n.mu.Unlock()
}

// Counts returns the counters: sent, failed (after every retry), dropped
// (a target's queue full: the log names the target and its own count),
// action_done, action_refused, action_failed.
func (n *Notifier) Counts() map[string]uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]uint64, len(n.counts))
	for k, v := range n.counts {
		out[k] = v
	}
	return out
}

// Run follows hub until ctx ends or the hub closes its subscriptions (the
// gateway shutting down): one goroutine reads events and queues
// notifications without ever waiting on delivery, one per target delivers,
// so a target that hangs or refuses holds up no other.
func (n *Notifier) Run(ctx context.Context, hub *router.Hub) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i, t := range n.targets {
		wg.Go(func() { n.deliver(ctx, t, n.queues[i]) })
	}
	defer func() { cancel(); wg.Wait() }()
	// From the first kept event: serve starts this before the router runs,
	// so nothing is missed and nothing old is told.
	last := int64(0)
	for ctx.Err() == nil {
		replay, _, sub := hub.Subscribe(last)
		for _, ev := range replay {
			n.onEvent(ev)
			last = int64(ev.ID)
		}
		if !n.follow(ctx, sub, &last) {
			return
		}
	}
}

// follow reads sub until it ends; it reports whether to subscribe again:
// only when the hub cut it off as too slow, resuming from the last id.
func (n *Notifier) follow(ctx context.Context, sub *router.Sub, last *int64) bool {
	defer sub.Close()
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-sub.C:
			if !ok {
				return errors.Is(sub.Err(), router.ErrSlowWatcher)
			}
			n.onEvent(ev)
			*last = int64(ev.ID)
		}
	}
}

func (n *Notifier) onEvent(ev message.Event) {
	nt, ok := n.notificationOf(ev)
	if !ok || !n.kinds[nt.Kind] {
		return
	}
	key := nt.Kind + "\x00" + nt.ID
	if n.told[key] { // only the reading goroutine gets here
		return
	}
	n.told[key] = true
	if n.toldOrder = append(n.toldOrder, key); len(n.toldOrder) > maxTold {
		delete(n.told, n.toldOrder[0])
		n.toldOrder = n.toldOrder[1:]
	}
	for i, q := range n.queues {
		select {
		case q <- nt:
		default: // the target is too slow: this notification is not for it
			n.count("dropped")
			n.cfg.Log.Warn("notification dropped: the target's queue is full", "target", redact(n.targets[i]),
				"kind", nt.Kind, "id", nt.ID, "dropped_for_target", n.drops[i].Add(1))
		}
	}
}

// linkBase is where action links point, without a trailing slash; empty
// sends no buttons.
func (n *Notifier) linkBase() string {
	if n.cfg.BaseURL != "" {
		return n.cfg.BaseURL
	}
	if f := n.base.Load(); f != nil {
		if b := strings.TrimSuffix((*f)(), "/"); strings.HasPrefix(b, "http") {
			return b
		}
	}
	return ""
}

func (n *Notifier) link(base string, a Action) string {
	return base + "/v1/actions/" + n.links.Token(a)
}

func (n *Notifier) notificationOf(ev message.Event) (Notification, bool) {
	nt := Notification{Time: ev.Time.UTC(), Priority: 4}
	base := n.linkBase()
	switch {
	case ev.Type == message.EventPermission && ev.Permission != nil && ev.Permission.State == message.PermissionPending:
		p := ev.Permission
		nt.Kind, nt.ID, nt.Address, nt.Name, nt.Source = KindPrompt, p.ID, p.Address, p.Name, string(p.Source)
		nt.Title = "Waiting for you: " + p.ToolName
		if p.Name != "" {
			nt.Title += " in " + p.Name
		}
		nt.Message = firstOf(p.Description, string(p.Input))
		if base == "" {
			break
		}
		if len(p.Questions) == 1 && !p.Questions[0].MultiSelect {
			q := p.Questions[0]
			nt.Message = q.Question
			for _, o := range q.Options {
				if len(nt.Actions) == maxActions {
					break
				}
				nt.Actions = append(nt.Actions, ActionButton{Label: o, URL: n.link(base, Action{Kind: KindPrompt, ID: p.ID, Verb: "answer", Quest: q.Question, Option: o})})
			}
		} else if len(p.Questions) == 0 {
			nt.Actions = []ActionButton{{Label: "Allow", URL: n.link(base, Action{Kind: KindPrompt, ID: p.ID, Verb: "allow"})}}
			if len(p.Suggestions) > 0 {
				// The session's first suggestion, as its own dialog offers
				// "Yes, and don't ask again".
				nt.Actions = append(nt.Actions, ActionButton{Label: "Always allow", URL: n.link(base, Action{Kind: KindPrompt, ID: p.ID, Verb: "always"})})
			}
			nt.Actions = append(nt.Actions, ActionButton{Label: "Deny", URL: n.link(base, Action{Kind: KindPrompt, ID: p.ID, Verb: "deny"})})
		}
	case ev.Type == message.EventHeld && ev.Held != nil:
		m := ev.Held.Message
		nt.Kind, nt.ID, nt.Address = KindHeld, m.ID, m.From
		nt.Title = "Held message from " + firstOf(m.FromName, m.From)
		nt.Message = firstOf(m.Body, ev.Held.Reason)
		if base != "" {
			nt.Actions = []ActionButton{
				{Label: "Release", URL: n.link(base, Action{Kind: KindHeld, ID: m.ID, Verb: "release"})},
				{Label: "Deny", URL: n.link(base, Action{Kind: KindHeld, ID: m.ID, Verb: "deny"})},
			}
		}
	case ev.Type == message.EventIdle && ev.Idle != nil:
		nt.Kind, nt.ID, nt.Priority = KindIdle, ev.Idle.SubID, 3
		nt.Address = ev.Idle.Peer
		nt.Title, nt.Message = "Idle: "+ev.Idle.Peer, "The session finished its turn."
	case ev.Type == message.EventRemote && ev.Remote != nil && ev.Remote.Kind == "result":
		r := ev.Remote
		nt.Kind, nt.ID, nt.Address, nt.Priority = KindTurn, r.UUID, r.Address, 3
		nt.Title, nt.Message = "Turn ended: "+r.Address, firstOf(r.Text, "(no text)")
	default:
		return nt, false
	}
	if len(nt.Message) > 1024 {
		nt.Message = nt.Message[:1024] + "…"
	}
	return nt, true
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// deliver sends what q holds to t, in order, until ctx ends.
func (n *Notifier) deliver(ctx context.Context, t target, q <-chan Notification) {
	for {
		select {
		case <-ctx.Done():
			return
		case nt := <-q:
			n.send(ctx, t, nt)
		}
	}
}

// send posts nt to t, retrying with backoff; a 4xx other than 429 is not
// retried. The log names the target, never a link (its token acts).
func (n *Notifier) send(ctx context.Context, t target, nt Notification) {
	body, hdr, endpoint := n.encode(t, nt)
	err := clock.Retry(ctx, n.cfg.Clock, n.cfg.Backoff.New(n.cfg.Clock), func() error {
		return n.post(ctx, endpoint, body, hdr)
	}, nil)
	switch {
	case err == nil:
		n.count("sent")
	case ctx.Err() == nil || !errors.Is(err, ctx.Err()):
		n.cfg.Log.Warn("notification not delivered", "target", redact(t), "kind", nt.Kind, "id", nt.ID, "err", err.Error())
		n.count("failed")
	}
}

// post is one try. Its error is what the log says of a failure; one
// wrapped by backoff.Permanent is not worth another try, and ctx's own
// error means the gateway is stopping.
func (n *Notifier) post(ctx context.Context, endpoint string, body []byte, hdr map[string]string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return backoff.Permanent(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := n.cfg.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return backoff.Permanent(ctx.Err())
		}
		return errors.New("unreachable")
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	if res.StatusCode < 300 {
		return nil
	}
	last := res.Status
	if res.StatusCode < 400 {
		last += " (redirects are not followed)"
	}
	if res.StatusCode < 500 && res.StatusCode != http.StatusTooManyRequests {
		return backoff.Permanent(errors.New(last))
	}
	return errors.New(last)
}

// redact is a target as logs show it: scheme and host, no path or query
// (a webhook URL may carry its own secret).
func redact(t target) string {
	u, err := url.Parse(t.url)
	if err != nil {
		return "(unparsable)"
	}
	if u.Scheme == "ntfy" && u.Opaque != "" {
		if in, err := url.Parse(u.Opaque); err == nil {
			return "ntfy:" + in.Scheme + "://" + in.Host
		}
	}
	return u.Scheme + "://" + u.Host
}

// encode is the request body, headers and URL for a target.
func (n *Notifier) encode(t target, nt Notification) ([]byte, map[string]string, string) {
	hdr := map[string]string{"Content-Type": "application/json"}
	if !t.ntfy {
		body, _ := json.Marshal(nt)
		if len(n.cfg.Secret) > 0 {
			m := hmac.New(sha256.New, n.cfg.Secret)
			m.Write(body)
			hdr[SignatureHeader] = "sha256=" + hex.EncodeToString(m.Sum(nil))
		}
		return body, hdr, t.url
	}
	// ntfy's JSON publishing: POST to the server root with the topic in the body.
	type action struct {
		Action string `json:"action"`
		Label  string `json:"label"`
		URL    string `json:"url"`
		Clear  bool   `json:"clear"`
	}
	msg := struct {
		Topic    string   `json:"topic"`
		Title    string   `json:"title"`
		Message  string   `json:"message"`
		Priority int      `json:"priority"`
		Tags     []string `json:"tags,omitempty"`
		Actions  []action `json:"actions,omitempty"`
	}{Topic: t.tpc, Title: nt.Title, Message: nt.Message, Priority: nt.Priority, Tags: []string{nt.Kind}}
	for _, a := range nt.Actions {
		msg.Actions = append(msg.Actions, action{Action: "view", Label: a.Label, URL: a.URL, Clear: true})
	}
	body, _ := json.Marshal(msg)
	return body, hdr, t.root
}
