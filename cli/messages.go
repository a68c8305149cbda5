package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/message/eventfmt"
	"github.com/sessiongateway/gateway/router"
)

// Sessions lists every reachable session; with none it says how to get
// one.
func Sessions(ctx context.Context, o *IO) error {
	ss, err := o.Client().Sessions(ctx)
	if err != nil {
		return err
	}
	if ss == nil {
		ss = []message.Session{}
	}
	o.Print(ss, func(w io.Writer) {
		if len(ss) == 0 {
			fmt.Fprintln(w, "no sessions yet: start Claude Code or Qwen Code (or try "+o.Cmd("demo-local")+"),")
			fmt.Fprintln(w, "or give serve remote credentials for claude.ai sessions (see "+o.Cmd("demo-cloud")+")")
			return
		}
		eventfmt.Sessions(w, ss)
	})
	return nil
}

// SendOptions are send's flags.
type SendOptions struct {
	To, Text, Mode, FromName string
	// TextFile, when set, is read for the text instead of Text; Text "-"
	// reads stdin.
	TextFile      string
	Files         []string
	Wait, Unpaced bool
	Timeout       time.Duration
}

// pollEvery is how often send --wait asks after its message.
const pollEvery = 200 * time.Millisecond

// Send sends one message. With Wait it follows the message to a final
// receipt, saying on stderr what it waits for when the receiver holds it;
// the exit code says whether it was delivered.
func Send(ctx context.Context, o *IO, so SendOptions) error {
	if m, err := message.ParseMode(so.Mode); err != nil || so.Mode == "" || m == message.ModeUnknown {
		return Usagef("--mode %q: want bypass or prompting", so.Mode)
	}
	// The gateway takes files from its files directory only and follows no
	// symlink below it: name the file by its real path, as the user can.
	for i, f := range so.Files {
		if abs, err := filepath.Abs(f); err == nil {
			so.Files[i] = abs
		}
		if real, err := filepath.EvalSymlinks(so.Files[i]); err == nil {
			so.Files[i] = real
		}
	}
	text, err := sendText(o, so)
	if err != nil {
		return err
	}
	c := o.Client()
	out, err := c.Send(ctx, api.SendBody{To: so.To, Body: text, Mode: so.Mode, FromName: so.FromName, Files: so.Files, Unpaced: so.Unpaced})
	if err != nil {
		return err
	}
	if so.Wait {
		out = waitFinal(ctx, o, c, out, so.Timeout)
	}
	if o.JSON {
		PrintJSON(o.Stdout, out)
	} else if so.Wait {
		fmt.Fprintf(o.Stdout, "%s %s\n", out.Message.ID, eventfmt.Status(out.Status, out.Receipts))
	} else {
		fmt.Fprintln(o.Stdout, out.Message.ID)
	}
	switch {
	case out.Status == message.StatusFailed:
		if !so.Wait || o.JSON { // with --wait the status line above already says why
			o.Note("gateway: send failed: %s", eventfmt.LastReason(out.Receipts))
		}
		return Exit(ExitNotDelivered)
	case !so.Wait, out.Status == message.StatusDelivered:
		return nil
	case out.Status.Final():
		return Exit(ExitNotDelivered)
	}
	return Exit(ExitPending)
}

// waitFinal follows a sent message until its status is final or timeout
// passes, and says once what it is waiting for when the receiver holds it.
func waitFinal(ctx context.Context, o *IO, c *api.Client, out router.Outbound, timeout time.Duration) router.Outbound {
	deadline := time.Now().Add(timeout)
	told := false
	for !out.Status.Final() && time.Now().Before(deadline) {
		if out.Status == message.StatusHeld && !told {
			told = true
			fmt.Fprintf(o.Stderr, "gateway: %s holds message %s (%s); waiting up to %s for someone there to release or deny it\n",
				holder(out), out.Message.ID, eventfmt.OrDash(heldReason(out)), time.Until(deadline).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return out
		case <-time.After(min(pollEvery, time.Until(deadline))):
		}
		next, err := c.Message(ctx, out.Message.ID)
		if err != nil {
			return out // kept no longer, or the gateway went: what we know
		}
		out = next
	}
	return out
}

func holder(out router.Outbound) string {
	for _, r := range out.Receipts {
		if r.Status == message.StatusHeld && r.From != "" {
			return r.From
		}
	}
	return "the receiver"
}

func heldReason(out router.Outbound) string {
	for _, r := range out.Receipts {
		if r.Status == message.StatusHeld {
			return r.Reason
		}
	}
	return ""
}

// Watch prints events as they happen until ctx ends.
func Watch(ctx context.Context, o *IO, since int64) error {
	out := o.hinted(o.Stdout)
	err := o.Client().Watch(ctx, since, o.gaps(func(ev message.Event) error {
		if o.JSON {
			b, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(o.Stdout, "%s\n", b)
			return err
		}
		line := eventfmt.Line(ev)
		if line == "" {
			return nil
		}
		_, err := fmt.Fprintln(out, line)
		return err
	}))
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// gaps says on stderr that a watch's replay lost events (the gateway
// forgot them), and hands fn every other event.
func (o *IO) gaps(fn func(message.Event) error) func(message.Event) error {
	return func(ev message.Event) error {
		if ev.Type == api.EventGap {
			_, err := fmt.Fprintf(o.Stderr, "gateway: events after %d were forgotten before they could be replayed; what follows starts later\n", ev.ID)
			return err
		}
		return fn(ev)
	}
}

// Idle asks a peer to say when it is idle; with wait, prints the notice.
func Idle(ctx context.Context, o *IO, to string, wait bool, timeout time.Duration) error {
	rctx, cancel := context.WithTimeout(ctx, timeout+10*time.Second)
	defer cancel()
	res, err := o.Client().NotifyWhenIdle(rctx, api.IdleBody{To: to, Wait: wait, Timeout: timeout.String()})
	if err != nil {
		return err
	}
	o.Print(res, func(w io.Writer) {
		if res.Notice != nil {
			fmt.Fprintf(w, "%s %s\n", res.Notice.Peer, res.Notice.State)
		} else {
			fmt.Fprintln(w, res.SubscriptionID)
		}
	})
	if wait && res.Notice == nil {
		o.Note("gateway: no idle notice before the timeout")
		return Exit(ExitPending)
	}
	return nil
}
