package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sessiongateway/gateway/message"
)

// Decider is what an action link acts through: the router.
type Decider interface {
	AnswerPermission(ctx context.Context, id string, a message.PermissionAnswer) (message.PermissionRequest, error)
	Decide(ctx context.Context, id string, release bool, reason string) error
}

// ActionHandler serves GET /v1/actions/{token}: it spends the link and does
// what it says, once, answering in plain text what happened. A forged link
// is 403; a used or expired one 410; a prompt or held message that was
// settled meanwhile 409.
func (n *Notifier) ActionHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		tok := r.PathValue("token")
		if tok == "" {
			tok = strings.TrimPrefix(r.URL.Path, "/v1/actions/")
		}
		a, err := n.links.Spend(tok)
		if err != nil {
			n.count("action_refused")
			code := http.StatusGone
			if errors.Is(err, ErrForged) {
				code = http.StatusForbidden
			}
			w.WriteHeader(code)
			fmt.Fprintln(w, err)
			return
		}
		what, err := n.act(r.Context(), a)
		if err != nil {
			n.count("action_failed")
			w.WriteHeader(http.StatusConflict)
			fmt.Fprintf(w, "nothing done: %v\n", err)
			return
		}
		n.count("action_done")
		fmt.Fprintln(w, what)
	})
}

var past = map[string]string{"allow": "allowed", "always": "allowed, and always from now on", "deny": "denied", "release": "released"}

func (n *Notifier) act(ctx context.Context, a Action) (string, error) {
	switch {
	case a.Kind == "held" && (a.Verb == "release" || a.Verb == "deny"):
		if err := n.cfg.Decider.Decide(ctx, a.ID, a.Verb == "release", "denied from a notification"); err != nil {
			return "", err
		}
		return fmt.Sprintf("held message %s: %s", a.ID, past[a.Verb]), nil
	case a.Kind == "prompt":
		ans := message.PermissionAnswer{By: "notification"}
		switch a.Verb {
		case "allow":
			ans.Behavior = message.BehaviorAllow
		case "always":
			ans.Behavior, ans.Suggestions = message.BehaviorAllow, []int{1}
		case "deny":
			ans.Behavior, ans.Message = message.BehaviorDeny, "denied from a notification"
		case "answer":
			ans.Behavior, ans.Answers = message.BehaviorAllow, map[string][]string{a.Quest: {a.Option}}
		default:
			return "", fmt.Errorf("unknown action %q", a.Verb)
		}
		p, err := n.cfg.Decider.AnswerPermission(ctx, a.ID, ans)
		if ia := (*message.InvalidAnswerError)(nil); errors.As(err, &ia) && ia.Problem == message.AnswerNotCarried && a.Verb == "deny" {
			// A channel carries no reason: the button's own text is not
			// worth leaving the prompt waiting for.
			ans.Message = ""
			p, err = n.cfg.Decider.AnswerPermission(ctx, a.ID, ans)
		}
		if err != nil {
			return "", err
		}
		if a.Verb == "answer" {
			return fmt.Sprintf("prompt %s (%s): answered %q", p.ID, p.ToolName, a.Option), nil
		}
		return fmt.Sprintf("prompt %s (%s): %s", p.ID, p.ToolName, past[a.Verb]), nil
	}
	return "", fmt.Errorf("unknown action %q", a.Verb)
}
