package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/message/eventfmt"
)

// Held lists the inbound messages held for a decision, with the short ids
// release and deny take.
func Held(ctx context.Context, o *IO) error {
	hs, err := o.Client().Held(ctx)
	if err != nil {
		return err
	}
	if hs == nil {
		hs = []message.Held{}
	}
	o.Print(hs, func(w io.Writer) {
		if len(hs) == 0 {
			fmt.Fprintln(w, "no held messages: a message waits here when serve --inbound hold (or mode parity) keeps it for you")
			return
		}
		for _, h := range hs {
			fmt.Fprintf(w, "%s from %s (%s): %s\n  %s\n", Short(h.Message.ID), eventfmt.Clean(h.Message.FromName), eventfmt.Clean(h.Message.From), eventfmt.Clean(h.Reason), eventfmt.Clean(h.Message.Body))
		}
		fmt.Fprintf(w, "decide with: %s, or %s\n", o.Cmd("release ID"), o.Cmd("deny ID [--reason TEXT]"))
	})
	return nil
}

// Decision is what release and deny did, as --json prints it.
type Decision struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"` // held or prompt
	Action string `json:"action"`
	From   string `json:"from,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// heldID finds the held message id, or a unique prefix of one, names.
func heldID(ctx context.Context, c *api.Client, id string) (message.Held, bool, error) {
	hs, err := c.Held(ctx)
	if err != nil {
		return message.Held{}, false, err
	}
	ids := make([]string, len(hs))
	for i, h := range hs {
		ids[i] = h.Message.ID
	}
	full, ok, err := Resolve(id, ids)
	if !ok || err != nil {
		return message.Held{}, false, err
	}
	for _, h := range hs {
		if h.Message.ID == full {
			return h, true, nil
		}
	}
	return message.Held{}, false, nil
}

// Release delivers a held message and says so.
func Release(ctx context.Context, o *IO, id string) error {
	c := o.Client()
	h, ok, err := heldID(ctx, c, id)
	if err != nil {
		return err
	}
	if !ok {
		return notFound("no held message has id %s (see %s)", id, o.Cmd("held"))
	}
	if err := c.Decide(ctx, h.Message.ID, true, ""); err != nil {
		return err
	}
	d := Decision{ID: h.Message.ID, Kind: "held", Action: "release", From: h.Message.FromName}
	o.Print(d, func(w io.Writer) {
		fmt.Fprintf(w, "released %s from %s: delivered to its recipient\n", Short(d.ID), eventfmt.OrDash(d.From))
	})
	return nil
}

// Deny denies a permission prompt, or else a held message, whose id (or a
// unique start of it) is id; text is told to the session's model or to the
// sender.
func Deny(ctx context.Context, o *IO, id, text string) error {
	c := o.Client()
	pid, ok, err := promptID(ctx, c, id)
	if err != nil {
		return err
	}
	if ok {
		p, err := c.AnswerPermission(ctx, pid, message.PermissionAnswer{Behavior: message.BehaviorDeny, Message: text, By: "cli"})
		if err != nil {
			return err
		}
		return answered(o, "denied", p)
	}
	// Not a pending prompt: a held message, as before prompts existed.
	h, ok, err := heldID(ctx, c, id)
	if err != nil {
		return err
	}
	if !ok {
		// Neither: the gateway says why a prompt id is not pending (settled, withdrawn).
		p, err := c.AnswerPermission(ctx, id, message.PermissionAnswer{Behavior: message.BehaviorDeny, Message: text, By: "cli"})
		if err == nil {
			return answered(o, "denied", p)
		}
		if !api.IsNotFound(err) {
			return err
		}
		return notFound("no permission prompt or held message has id %s (see %s, %s)", id, o.Cmd("permissions"), o.Cmd("held"))
	}
	if err := c.Decide(ctx, h.Message.ID, false, text); err != nil {
		return err
	}
	d := Decision{ID: h.Message.ID, Kind: "held", Action: "deny", From: h.Message.FromName, Reason: text}
	o.Print(d, func(w io.Writer) {
		fmt.Fprintf(w, "denied %s from %s: not delivered", Short(d.ID), eventfmt.OrDash(d.From))
		if text != "" {
			fmt.Fprintf(w, "; the sender is told %q", text)
		}
		fmt.Fprintln(w)
	})
	return nil
}

func notFound(format string, a ...any) error {
	return &Error{Exit: ExitError, Code: CodeNotFound, Err: fmt.Errorf(format, a...)}
}
