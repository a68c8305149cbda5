package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sessiongateway/gateway/api"
)

// fedView is the part of the federation's status that status shows.
type fedView struct {
	Host string `json:"host"`
	Link *struct {
		State string `json:"state"`
	} `json:"link"`
	Hosts []struct {
		Host      string  `json:"host"`
		Self      bool    `json:"self"`
		Sessions  int     `json:"sessions"`
		Age       float64 `json:"age_seconds"`
		Reachable bool    `json:"reachable"`
	} `json:"hosts"`
}

// Status prints the gateway on one screen: version and uptime, legs with
// their state and sessions, remote links, what waits for a person, the
// outbox and the federation's peers.
func Status(ctx context.Context, o *IO) error {
	st, err := o.Client().Status(ctx)
	if err != nil {
		return err
	}
	o.Print(st, func(w io.Writer) { writeStatus(w, o, st) })
	return nil
}

func writeStatus(w io.Writer, o *IO, st api.Status) {
	up := time.Duration(st.UptimeSeconds) * time.Second
	fmt.Fprintf(w, "gateway %s, up %s (since %s)\n", st.Version, up, st.StartedAt.Local().Format("2006-01-02 15:04:05"))
	if st.ConsoleURL != "" {
		fmt.Fprintf(w, "console and API:  %s\n", st.ConsoleURL)
	} else {
		fmt.Fprintf(w, "console and API:  off (serve --api 127.0.0.1:8788 turns them on)\n")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LEG\tSTATE\tSESSIONS\tALIASES\tBY HOST")
	for _, l := range st.Legs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", l.Name, l.State, l.Sessions, l.Aliases, byHost(l.Hosts))
	}
	tw.Flush()
	fmt.Fprintln(w)
	if len(st.Links) > 0 {
		var ls []string
		for _, l := range st.Links {
			s := l.SessionID + " " + l.State.String()
			if l.Attempt > 0 {
				s += fmt.Sprintf(" (attempt %d)", l.Attempt)
			}
			ls = append(ls, s)
		}
		fmt.Fprintf(w, "remote links:     %s\n", strings.Join(ls, ", "))
	}
	fmt.Fprintf(w, "pending prompts:  %d%s\n", st.PendingPrompts, hintIf(st.PendingPrompts > 0, o.Cmd("permissions")))
	fmt.Fprintf(w, "held messages:    %d%s\n", st.Held, hintIf(st.Held > 0, o.Cmd("held")))
	if st.OutboxDepth != nil {
		fmt.Fprintf(w, "outbox:           %d waiting for the remote server%s\n", *st.OutboxDepth, hintIf(*st.OutboxDepth > 0, o.Cmd("outbox")))
	}
	if st.Federation != nil {
		fmt.Fprintf(w, "federation:       %s\n", federationLine(st.Federation))
	}
}

func byHost(h map[string]int) string {
	if len(h) == 0 {
		return "-"
	}
	var parts []string
	for host, n := range h {
		parts = append(parts, fmt.Sprintf("%s=%d", host, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func hintIf(ok bool, cmd string) string {
	if !ok {
		return ""
	}
	return "  (see " + cmd + ")"
}

// federationLine summarises the federation's status: this host, its link
// and each peer.
func federationLine(raw any) string {
	b, _ := json.Marshal(raw)
	var f fedView
	if json.Unmarshal(b, &f) != nil {
		return "?"
	}
	s := "host " + f.Host
	if f.Link != nil {
		s += ", link " + f.Link.State
	}
	var peers []string
	for _, h := range f.Hosts {
		if h.Self {
			continue
		}
		p := fmt.Sprintf("%s (%d sessions, heard %s ago)", h.Host, h.Sessions, (time.Duration(h.Age) * time.Second).String())
		if !h.Reachable {
			p = h.Host + " (unreachable)"
		}
		peers = append(peers, p)
	}
	if len(peers) == 0 {
		return s + "; no peers heard yet"
	}
	return s + "; peers: " + strings.Join(peers, ", ")
}
