package eventfmt

import (
	"fmt"
	"io"
	"strings"

	"github.com/sessiongateway/gateway/message"
)

// Control writes how the session at addr answered control request c.
func Control(w io.Writer, addr string, c message.Control, r message.ControlResult) {
	what := "interrupt"
	switch c.Kind {
	case message.ControlSetPermissionMode:
		what = "permission mode " + c.Mode
	case message.ControlSetModel:
		what = "model " + OrDash(c.Model)
	}
	if r.Acknowledged {
		fmt.Fprintf(w, "%s accepted %s\n", addr, what)
		return
	}
	fmt.Fprintf(w, "%s: %s %s\n", addr, what, OrDash(r.Detail))
}

// SessionInfo writes what a remote session told about itself.
func SessionInfo(w io.Writer, i message.SessionInfo) {
	fmt.Fprintf(w, "session:          %s\n", i.Address)
	fmt.Fprintf(w, "followed:         %v\n", i.Followed)
	fmt.Fprintf(w, "permission mode:  %s\n", OrDash(i.PermissionMode))
	fmt.Fprintf(w, "model:            %s\n", OrDash(i.Model))
	if !i.Initialized {
		why := "not yet"
		if !i.Followed {
			why = "the session is not followed"
		}
		fmt.Fprintf(w, "initialize:       not answered (%s); models and commands unknown\n", why)
		return
	}
	fmt.Fprintf(w, "output style:     %s\n", OrDash(i.OutputStyle))
	fmt.Fprintf(w, "models (%d):\n", len(i.Models))
	for _, m := range i.Models {
		fmt.Fprintf(w, "  %s\n", describe(m.Value, m.DisplayName, m.Description))
	}
	fmt.Fprintf(w, "commands (%d):\n", len(i.Commands))
	for _, c := range i.Commands {
		fmt.Fprintf(w, "  /%s\n", describe(strings.TrimPrefix(c.Name, "/"), c.ArgumentHint, c.Description))
	}
}

// describe is "name (aside): text", leaving out what is empty.
func describe(name, aside, text string) string {
	if aside != "" && aside != name {
		name += " (" + aside + ")"
	}
	if text != "" {
		name += ": " + message.OneLine(text, 120)
	}
	return name
}
