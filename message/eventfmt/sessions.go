package eventfmt

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/sessiongateway/gateway/message"
)

// Sessions writes `gateway sessions`' table: one row per session, with a
// HOST column when any session has a host (federation is on).
func Sessions(w io.Writer, ss []message.Session) {
	hosts := false
	for _, s := range ss {
		hosts = hosts || s.Host != ""
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "NAME\tREF\tPROTOCOL\tKIND\tSTATUS\tPID\tADDRESS"
	if hosts {
		head += "\tHOST"
	}
	fmt.Fprintln(tw, head)
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s", OrDash(s.Name), s.Ref, s.Protocol, OrDash(s.Kind), OrDash(s.Status), s.PID, s.Address)
		if hosts {
			fmt.Fprintf(tw, "\t%s", OrDash(s.Host))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}
