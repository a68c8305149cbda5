package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/sessiongateway/gateway/message"
)

// RunSession starts a hosted session (`gateway run AGENT`) and prints it;
// with follow it then watches the session's output.
func RunSession(ctx context.Context, o *IO, spec message.StartSpec, follow bool) error {
	if spec.Cwd == "" {
		spec.Cwd = "."
	}
	abs, err := filepath.Abs(spec.Cwd)
	if err != nil {
		return Usagef("--cwd %s: %v", spec.Cwd, err)
	}
	spec.Cwd = abs
	s, err := o.Client().StartSession(ctx, spec)
	if err != nil {
		return err
	}
	o.Print(s, func(w io.Writer) {
		fmt.Fprintf(w, "started %s (%s) in %s: %s\n", s.Name, spec.Agent, s.Cwd, s.Address)
		fmt.Fprintf(w, "  send it a turn: %s\n  watch it:       %s\n  stop it:        %s\n",
			o.Cmd("send "+s.Name+" TEXT"), o.Cmd("remote watch "+s.Address), o.Cmd("stop "+s.Name))
	})
	if !follow {
		return nil
	}
	return RemoteWatch(ctx, o, s.Address, 0)
}

// StopSession ends a hosted session (`gateway stop NAME`).
func StopSession(ctx context.Context, o *IO, name string) error {
	s, err := o.Client().StopSession(ctx, name)
	if err != nil {
		return err
	}
	o.Print(s, func(w io.Writer) { fmt.Fprintf(w, "stopped %s: its CLI ended and it will not be resumed\n", s.Name) })
	return nil
}
