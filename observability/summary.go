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
	Name    string   // registered under on the local legs
	Legs    []string // every leg running
	Socket  string   // the control socket
	APIURL  string   // "" without --api
	Version string
	// StateDir is added to each next command as --state-dir when it is not
	// DefaultStateDir, the one the commands find by themselves.
	StateDir, DefaultStateDir string
}

// localLegs are the legs the gateway registers on under its name, as a
// session of the local CLIs; the others (remote, federation, mcp) run.
var localLegs = map[string]bool{"claude": true, "qwen": true}

// Write prints s as a few aligned lines; a nil w prints nothing.
func (s Summary) Write(w io.Writer) error {
	if w == nil {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "gateway %s ready\n", s.Version)
	for _, l := range s.Legs {
		if localLegs[l] {
			fmt.Fprintf(tw, "  %s\tregistered as %q\n", l, s.Name)
		} else {
			fmt.Fprintf(tw, "  %s\trunning\n", l)
		}
	}
	fmt.Fprintf(tw, "  control socket\t%s\n", s.Socket)
	if api := strings.TrimSuffix(s.APIURL, "/"); api != "" {
		fmt.Fprintf(tw, "  API\t%s\n", api)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	sd := ""
	if s.StateDir != s.DefaultStateDir {
		sd = " --state-dir " + shellQuote(s.StateDir)
	}
	_, err := fmt.Fprintf(w, "next, in another terminal:\n  gateway status%s\n  gateway sessions%s\n  gateway send%s NAME \"hello\"\n  gateway watch%s\n", sd, sd, sd, sd)
	return err
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
