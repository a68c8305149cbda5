package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/message"
)

func clientFor(stateDir string) *api.Client {
	return api.NewUnixClient(filepath.Join(stateDir, "gateway.sock"))
}

func fail(e *env, err error) int {
	fmt.Fprintf(e.stderr, "gateway: %v\n", err)
	return exitError
}

func printJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func runSessions(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "sessions")
	sd := stateDirFlag(fs, e)
	asJSON := fs.Bool("json", false, "print a JSON array")
	if _, err := parse(fs, args); err != nil {
		return flagErr(err)
	}
	ss, err := clientFor(*sd).Sessions(ctx)
	if err != nil {
		return fail(e, err)
	}
	if *asJSON {
		if ss == nil {
			ss = []message.Session{}
		}
		printJSON(e.stdout, ss)
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tREF\tPROTOCOL\tKIND\tSTATUS\tPID\tADDRESS")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", orDash(s.Name), s.Ref, s.Protocol, orDash(s.Kind), orDash(s.Status), s.PID, s.Address)
	}
	tw.Flush()
	return exitOK
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

func runSend(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "send")
	sd := stateDirFlag(fs, e)
	mode := fs.String("mode", "prompting", "attested permission mode: bypass or prompting")
	wait := fs.Bool("wait", false, "wait for a final receipt and print it; the exit code says whether it was delivered")
	timeout := fs.Duration("timeout", 30*time.Second, "how long --wait waits")
	asJSON := fs.Bool("json", false, "print JSON")
	name := fs.String("from-name", "", "display name to send as (default: the gateway's name)")
	var files multi
	fs.Var(&files, "file", "attach a file (repeatable)")
	unpaced := fs.Bool("unpaced", false, "send even if the receiver's published limits say it would be dropped (to hear its dropped receipt)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 2 {
		fmt.Fprintln(e.stderr, "usage: gateway send ADDRESS TEXT [--mode bypass|prompting] [--wait] [--timeout D] [--json]")
		return exitUsage
	}
	if _, err := message.ParseMode(*mode); err != nil || *mode == "" {
		fmt.Fprintf(e.stderr, "gateway: --mode %q: want bypass or prompting\n", *mode)
		return exitUsage
	}
	for i, f := range files {
		if abs, err := filepath.Abs(f); err == nil {
			files[i] = abs
		}
	}
	c := clientFor(*sd)
	body := api.SendBody{To: pos[0], Text: pos[1], Mode: *mode, FromName: *name, Files: files, Unpaced: *unpaced}
	if *wait {
		body.Wait, body.Timeout = true, timeout.String()
	}
	// The request itself may wait up to the timeout; give HTTP a little more.
	rctx, cancel := context.WithTimeout(ctx, *timeout+10*time.Second)
	defer cancel()
	out, err := c.Send(rctx, body)
	if err != nil {
		var ae *api.APIError
		if errors.As(err, &ae) && *asJSON {
			printJSON(e.stdout, ae.Body)
			return exitError
		}
		return fail(e, err)
	}
	if *asJSON {
		printJSON(e.stdout, out)
	} else if *wait {
		fmt.Fprintf(e.stdout, "%s %s\n", out.Message.ID, describe(out.Status, out.Receipts))
	} else {
		fmt.Fprintln(e.stdout, out.Message.ID)
	}
	switch {
	case out.Status == message.StatusFailed:
		if !*asJSON {
			fmt.Fprintf(e.stderr, "gateway: send failed: %s\n", lastReason(out.Receipts))
		}
		return exitNotDelivered
	case !*wait:
		return exitOK
	case out.Status == message.StatusDelivered:
		return exitOK
	case out.Status.Final():
		return exitNotDelivered
	}
	return exitPending
}

func lastReason(rs []message.Receipt) string {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Reason != "" {
			return rs[i].Reason
		}
	}
	return ""
}

func describe(st message.Status, rs []message.Receipt) string {
	s := st.String()
	if len(rs) > 0 {
		r := rs[len(rs)-1]
		if r.DropReason != 0 {
			s += " (" + r.DropReason.String() + ")"
		} else if r.Detail != "" {
			s += " (" + r.Detail + ")"
		}
		if r.Reason != "" {
			s += ": " + r.Reason
		}
	}
	if !st.Final() {
		s += " [not final]"
	}
	return s
}

func runWatch(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "watch")
	sd := stateDirFlag(fs, e)
	asJSON := fs.Bool("json", false, "print one JSON event per line")
	since := fs.Int64("since", -1, "replay kept events after this id (0 for all kept)")
	if _, err := parse(fs, args); err != nil {
		return flagErr(err)
	}
	err := clientFor(*sd).Watch(ctx, *since, func(ev message.Event) error {
		if *asJSON {
			b, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(e.stdout, "%s\n", b)
			return err
		}
		line := humanEvent(ev)
		if line == "" {
			return nil
		}
		_, err := fmt.Fprintln(e.stdout, line)
		return err
	})
	if err == nil || errors.Is(err, context.Canceled) {
		return exitOK
	}
	return fail(e, err)
}

func humanEvent(ev message.Event) string {
	t := ev.Time.Local().Format("15:04:05")
	switch {
	case ev.Message != nil:
		m := ev.Message
		from := m.FromName
		if from == "" {
			from = m.From
		}
		tag := ""
		if !m.Attested {
			tag = " (unattested)"
		}
		if m.Controller != "" {
			tag += " (controller " + m.Controller + ")"
		}
		return fmt.Sprintf("%s message from %s%s: %s", t, from, tag, m.Body)
	case ev.Receipt != nil:
		r := ev.Receipt
		return fmt.Sprintf("%s receipt %s %s", t, r.MsgID, describe(r.Status, []message.Receipt{*r}))
	case ev.Held != nil:
		return fmt.Sprintf("%s held %s from %s: %s (release or deny it: gateway release %s)", t, ev.Held.Message.ID, ev.Held.Message.FromName, ev.Held.Reason, ev.Held.Message.ID)
	case ev.Idle != nil:
		return fmt.Sprintf("%s idle %s is %s (subscription %s)", t, ev.Idle.Peer, ev.Idle.State, ev.Idle.SubID)
	case ev.Drop != nil:
		return fmt.Sprintf("%s drop %s from %s: %s", t, ev.Drop.MsgID, ev.Drop.From, ev.Drop.Reason)
	case ev.Remote != nil:
		// Across sessions, streamed copies would interleave: show only
		// what is complete (`gateway remote watch ID` streams one session).
		r := ev.Remote
		if r.Kind == "assistant" && !r.Final || r.Text == "" {
			return ""
		}
		return fmt.Sprintf("%s %s %s: %s", t, r.Address, r.Kind, message.OneLine(r.Text, 200))
	case ev.Permission != nil:
		p := ev.Permission
		switch p.State {
		case message.PermissionPending:
			return fmt.Sprintf("%s %s asks to use %s: %s (answer: gateway allow %s | gateway deny %s --message TEXT)",
				t, p.Address, p.ToolName, p.Summary(summaryWidth), p.ID, p.ID)
		case message.PermissionAnswered:
			by := ""
			if p.Answer != nil {
				by = string(p.Answer.Behavior) + " by " + orDash(p.Answer.By)
			}
			return fmt.Sprintf("%s permission %s answered: %s", t, p.ID, by)
		}
		return fmt.Sprintf("%s permission %s withdrawn by %s", t, p.ID, p.Address)
	case ev.Link != nil:
		l := ev.Link
		s := fmt.Sprintf("%s bridge:%s link %s", t, l.SessionID, l.State)
		if l.Error != "" {
			s += ": " + l.Error
		}
		return s
	}
	return fmt.Sprintf("%s %s", t, ev.Type)
}

func runHeld(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "held")
	sd := stateDirFlag(fs, e)
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parse(fs, args); err != nil {
		return flagErr(err)
	}
	hs, err := clientFor(*sd).Held(ctx)
	if err != nil {
		return fail(e, err)
	}
	if *asJSON {
		if hs == nil {
			hs = []message.Held{}
		}
		printJSON(e.stdout, hs)
		return exitOK
	}
	for _, h := range hs {
		fmt.Fprintf(e.stdout, "%s from %s (%s): %s\n  %s\n", h.Message.ID, h.Message.FromName, h.Message.From, h.Reason, h.Message.Body)
	}
	return exitOK
}

func runRelease(ctx context.Context, e *env, args []string) int {
	return decide(ctx, e, "release", args)
}

// runDeny denies a permission prompt, or else a held message with that id.
func runDeny(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "deny")
	sd := stateDirFlag(fs, e)
	asJSON := fs.Bool("json", false, "print the settled prompt as JSON")
	msg := fs.String("message", "", "why, told to the session's model (a prompt) or to the sender (a held message)")
	reason := fs.String("reason", "", "the same as --message")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(e.stderr, "usage: gateway deny ID [--message TEXT]")
		return exitUsage
	}
	if *msg != "" && *reason != "" && *msg != *reason {
		fmt.Fprintln(e.stderr, "gateway: --message and --reason are the same flag; give one")
		return exitUsage
	}
	text := *msg
	if text == "" {
		text = *reason
	}
	c := clientFor(*sd)
	p, err := c.AnswerPermission(ctx, pos[0], message.PermissionAnswer{Behavior: message.BehaviorDeny, Message: text, By: "cli"})
	if err == nil {
		return answered(e, *asJSON, "denied", p)
	}
	if !isNotFound(err) {
		return answerFailed(e, *asJSON, err)
	}
	// Not a prompt: a held message, as before prompts existed.
	if err := c.Decide(ctx, pos[0], false, text); err != nil {
		if isNotFound(err) {
			return fail(e, fmt.Errorf("no permission prompt or held message has id %s (see gateway permissions, gateway held)", pos[0]))
		}
		return fail(e, err)
	}
	if *asJSON {
		printJSON(e.stdout, map[string]string{"id": pos[0], "action": "deny"})
	}
	return exitOK
}

func decide(ctx context.Context, e *env, action string, args []string) int {
	fs := newFlags(e, action)
	sd := stateDirFlag(fs, e)
	reason := fs.String("reason", "", "reason told to the sender (deny)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		fmt.Fprintf(e.stderr, "usage: gateway %s ID\n", action)
		return exitUsage
	}
	if err := clientFor(*sd).Decide(ctx, pos[0], action == "release", *reason); err != nil {
		return fail(e, err)
	}
	return exitOK
}

func runIdle(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "idle")
	sd := stateDirFlag(fs, e)
	wait := fs.Bool("wait", false, "wait for the notice and print it")
	timeout := fs.Duration("timeout", 60*time.Second, "how long --wait waits")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(e.stderr, "usage: gateway idle ADDRESS [--wait] [--timeout D]")
		return exitUsage
	}
	rctx, cancel := context.WithTimeout(ctx, *timeout+10*time.Second)
	defer cancel()
	res, err := clientFor(*sd).NotifyWhenIdle(rctx, api.IdleBody{To: pos[0], Wait: *wait, Timeout: timeout.String()})
	if err != nil {
		return fail(e, err)
	}
	if *asJSON {
		printJSON(e.stdout, res)
	} else if res.Notice != nil {
		fmt.Fprintf(e.stdout, "%s %s\n", res.Notice.Peer, res.Notice.State)
	} else {
		fmt.Fprintln(e.stdout, res.SubscriptionID)
	}
	if *wait && res.Notice == nil {
		fmt.Fprintln(e.stderr, "gateway: no idle notice before the timeout")
		return exitPending
	}
	return exitOK
}

func runVersion(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "version")
	_ = stateDirFlag(fs, e) // accepted like every command's; the version is the binary's own
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parse(fs, args); err != nil {
		return flagErr(err)
	}
	if *asJSON {
		printJSON(e.stdout, map[string]string{"version": version})
	} else {
		fmt.Fprintf(e.stdout, "gateway %s\n", version)
	}
	return exitOK
}
