package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/mcp"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/message/eventfmt"
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
	eventfmt.Sessions(e.stdout, ss)
	return exitOK
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
	fs.Var(&files, "file", "attach a file from the gateway's files directory (serve --files-dir; default <state-dir>/files) (repeatable)")
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
	// The gateway takes files from its files directory only and follows no
	// symlink below it: name the file by its real path, as the user can.
	for i, f := range files {
		if abs, err := filepath.Abs(f); err == nil {
			files[i] = abs
		}
		if real, err := filepath.EvalSymlinks(files[i]); err == nil {
			files[i] = real
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
		fmt.Fprintf(e.stdout, "%s %s\n", out.Message.ID, eventfmt.Status(out.Status, out.Receipts))
	} else {
		fmt.Fprintln(e.stdout, out.Message.ID)
	}
	switch {
	case out.Status == message.StatusFailed:
		if !*asJSON {
			fmt.Fprintf(e.stderr, "gateway: send failed: %s\n", eventfmt.LastReason(out.Receipts))
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
		line := eventfmt.Line(ev)
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

func runMCP(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "mcp")
	sd := stateDirFlag(fs, e)
	name := fs.String("name", "", "the session name others reach this client by (default: the client's own name)")
	if _, err := parse(fs, args); err != nil {
		return flagErr(err)
	}
	if err := mcp.Stdio(ctx, clientFor(*sd), *name, os.Stdin, e.stdout); err != nil {
		return fail(e, err)
	}
	return exitOK
}
