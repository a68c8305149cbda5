package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/message"
)

// WriteOutbox writes `gateway outbox`' table of items as of now.
func WriteOutbox(w io.Writer, items []message.OutboxItem, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tTRIES\tTO\tACCEPTED\tNEXT TRY\tLAST ERROR\tBODY")
	for _, it := range items {
		next := "-"
		if it.State == message.OutboxPending {
			next = "now"
			if it.NextAttemptAt.After(now) {
				next = "in " + it.NextAttemptAt.Sub(now).Round(time.Second).String()
			}
		}
		last := "-"
		if it.LastError != "" {
			last = message.Preview(bounded.Clip(it.LastError, 60))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s ago\t%s\t%s\t%s\n", it.ID, it.State, it.Attempts, it.To,
			now.Sub(it.AcceptedAt).Round(time.Second), next, last, it.Preview)
	}
	tw.Flush()
}
