package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/sessiongateway/gateway/api"
)

// sendText is the text send sends: TEXT itself, stdin for "-", or
// --text-file's content. What it reads is capped at the API's cap on one
// message's text (api.MaxText), so a longer text is refused here, whole,
// before the gateway is asked.
func sendText(o *IO, so SendOptions) (string, error) {
	switch {
	case so.TextFile != "" && so.Text != "":
		return "", Usagef("send takes TEXT or --text-file, not both")
	case so.TextFile != "":
		f, err := os.Open(so.TextFile)
		if err != nil {
			return "", fmt.Errorf("--text-file: %w", err)
		}
		defer f.Close()
		return readText(f, "--text-file "+so.TextFile)
	case so.Text == "-":
		in := o.Stdin
		if in == nil {
			in = os.Stdin
		}
		return readText(in, "the text on stdin")
	case so.Text == "":
		return "", Usagef("send needs TEXT: give it, - to read it from stdin, or --text-file FILE")
	}
	return so.Text, nil
}

func readText(r io.Reader, what string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, api.MaxText+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("reading %s: %w", what, err)
	case len(b) > api.MaxText:
		return "", fmt.Errorf("%s is over %d bytes (%d KiB), the most one message may carry", what, api.MaxText, api.MaxText>>10)
	case len(b) == 0:
		return "", fmt.Errorf("%s is empty: a message needs text", what)
	}
	return string(b), nil
}
