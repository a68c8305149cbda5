package observability

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Summary is what a person who just started the gateway at a terminal
// needs: where it is reachable and what to type next.
type Summary struct {
	Legs    []SummaryLeg
	Socket  string // the control socket
	APIURL  string // "" without --api
	Version string
	// StateDir, when not "", is added to each next command as --state-dir:
	// the state directory is not the one the commands find by default.
	StateDir string
}

// SummaryLeg is a leg the gateway runs, and the name it registered under
// there ("" for a leg it does not register on: remote, mcp).
type SummaryLeg struct{ Leg, As string }

// Write prints s as a few aligned lines.
func (s Summary) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "gateway %s ready\n", s.Version)
	for _, l := range s.Legs {
		if l.As != "" {
			fmt.Fprintf(tw, "  %s\tregistered as %q\n", l.Leg, l.As)
		} else {
			fmt.Fprintf(tw, "  %s\trunning\n", l.Leg)
		}
	}
	fmt.Fprintf(tw, "  control socket\t%s\n", s.Socket)
	if s.APIURL != "" {
		fmt.Fprintf(tw, "  API\t%s\n", s.APIURL)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	sd := ""
	if s.StateDir != "" {
		sd = " --state-dir " + shellQuote(s.StateDir)
	}
	_, err := fmt.Fprintf(w, "next, in another terminal:\n  gateway sessions%s\n  gateway send%s NAME \"hello\"\n  gateway watch%s\n", sd, sd, sd)
	return err
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
