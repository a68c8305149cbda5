package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sessiongateway/gateway/api"
)

// Away prints the away switch, or sets it: "on", "off", or "" to read.
func Away(ctx context.Context, o *IO, to string) error {
	c := o.Client()
	var (
		st  api.AwayStatus
		err error
	)
	switch to {
	case "":
		st, err = c.Away(ctx)
	case "on", "off":
		st, err = c.SetAway(ctx, to == "on")
	default:
		return Usagef("away takes on or off, not %q", to)
	}
	if err != nil {
		return err
	}
	o.Print(st, func(w io.Writer) {
		since := ""
		if !st.Since.IsZero() {
			since = " since " + st.Since.Local().Format(time.DateTime)
		}
		if st.Away {
			fmt.Fprintf(w, "away%s: a local session's prompt waits for an answer from elsewhere (gateway away off ends it)\n", since)
			return
		}
		fmt.Fprintf(w, "here%s: a local session's prompt goes back to its terminal when nobody answers it within --local-prompt-wait (gateway away on changes that)\n", since)
	})
	return nil
}
