package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/message/eventfmt"
)

// RemoteOptions are the remote subcommands' flags; each takes those it
// names.
type RemoteOptions struct {
	Follow                          bool
	Since                           int64
	Env, Title, Model, Repo, Branch string
}

// noRemoteLeg says how to get a remote leg when the gateway runs none.
func noRemoteLeg(ctx context.Context, o *IO, c *api.Client) error {
	r, err := c.Ready(ctx)
	if err != nil {
		return err
	}
	if _, ok := r.Legs["remote"]; ok {
		return nil
	}
	return &Error{Exit: ExitError, Code: "no_remote_leg", Err: fmt.Errorf(
		"this gateway runs no remote leg: give serve remote credentials for claude.ai (--remote-claude-credentials, --remote-token-file or --remote-session-key-file), or try one without an account: %s", o.Cmd("demo-cloud"))}
}

// RemoteSessions lists the remote sessions; without a remote leg it fails
// saying how to get one.
func RemoteSessions(ctx context.Context, o *IO) error {
	c := o.Client()
	if err := noRemoteLeg(ctx, o, c); err != nil {
		return err
	}
	ss, err := c.RemoteSessions(ctx)
	if err != nil {
		return err
	}
	o.Print(ss, func(w io.Writer) {
		if len(ss) == 0 {
			fmt.Fprintln(w, "no remote sessions yet: create one with "+o.Cmd("remote create TEXT")+", or open one on claude.ai")
			return
		}
		eventfmt.RemoteSessions(w, ss)
	})
	return nil
}

// RemoteEnvironments lists the environments sessions can be created in.
func RemoteEnvironments(ctx context.Context, o *IO) error {
	c := o.Client()
	if err := noRemoteLeg(ctx, o, c); err != nil {
		return err
	}
	envs, err := c.Environments(ctx)
	if err != nil {
		return err
	}
	o.Print(envs, func(w io.Writer) { eventfmt.Environments(w, envs) })
	return nil
}

// RemoteInfo prints what the session told the gateway about itself.
func RemoteInfo(ctx context.Context, o *IO, id string) error {
	c := o.Client()
	info, err := c.RemoteInfo(ctx, c.RemoteAddress(ctx, id))
	if err != nil {
		return err
	}
	o.Print(info, func(w io.Writer) { eventfmt.SessionInfo(w, info) })
	return nil
}

// RemoteControl sends the session a control request and prints its answer.
func RemoteControl(ctx context.Context, o *IO, id string, ctl message.Control) error {
	c := o.Client()
	addr := c.RemoteAddress(ctx, id)
	r, err := c.Control(ctx, addr, ctl)
	if err != nil {
		return err
	}
	o.Print(r, func(w io.Writer) { eventfmt.Control(w, addr, ctl, r.ControlResult) })
	return nil
}

// RemoteTitle sets the session's title.
func RemoteTitle(ctx context.Context, o *IO, id, title string) error {
	c := o.Client()
	return printSession(o)(c.RetitleRemote(ctx, c.RemoteAddress(ctx, id), title))
}

// RemoteArchive archives the session.
func RemoteArchive(ctx context.Context, o *IO, id string) error {
	c := o.Client()
	return printSession(o)(c.ArchiveRemote(ctx, c.RemoteAddress(ctx, id)))
}

func printSession(o *IO) func(message.Session, error) error {
	return func(s message.Session, err error) error {
		if err != nil {
			return err
		}
		o.Print(s, func(w io.Writer) { eventfmt.RemoteSession(w, s) })
		return nil
	}
}

// RemoteCreate creates a session with text as its first prompt and, with
// Follow, watches it.
func RemoteCreate(ctx context.Context, o *IO, text string, ro RemoteOptions) error {
	c := o.Client()
	s, err := c.CreateRemote(ctx, message.NewRemoteSession{Title: ro.Title, EnvironmentID: ro.Env, Model: ro.Model, Repo: ro.Repo, Branch: ro.Branch, Body: text})
	if err != nil {
		return err
	}
	o.Print(s, func(w io.Writer) { fmt.Fprintln(w, s.SessionID) })
	if !ro.Follow {
		return nil
	}
	// The new session's whole story: the event ring still has it.
	return RemoteWatch(ctx, o, s.SessionID, 0)
}

// RemoteWatch prints one remote session's output, prompts and link state
// until ctx ends.
func RemoteWatch(ctx context.Context, o *IO, id string, since int64) error {
	c := o.Client()
	var sid string
	s, err := c.Resolve(ctx, id)
	if err == nil && s.Protocol == message.ProtocolHosted && s.SessionID != "" {
		sid = s.SessionID // a hosted session's output has a remote session's shape
	} else if sid, err = c.RemoteSessionID(ctx, id); err != nil {
		return err
	}
	sw := eventfmt.NewSessionWatch(o.hinted(o.Stdout), sid, o.JSON)
	if !o.JSON && since < 0 {
		// Prompts raised before the watch started still wait for an answer.
		ps, err := c.Permissions(ctx, false)
		if err != nil {
			return err
		}
		sw.Pending(ps)
	}
	err = c.Watch(ctx, since, o.gaps(sw.Event))
	sw.End()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
