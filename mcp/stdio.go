package mcp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"

	"github.com/sessiongateway/gateway/api"
)

// StdioOptions are `gateway mcp`'s flags.
type StdioOptions struct {
	// Name is the client's session name; empty: the client's own.
	Name string
	// Channel pushes what others send the client into its session as
	// Claude Code channel messages (channel.go), for a session that loads
	// `gateway mcp` with --channels.
	Channel bool
}

// Stdio is `gateway mcp`: it upgrades a connection to the gateway's /mcp
// (over c, the control socket) and copies in to it and it to out until
// either side ends. The client's session lives in the gateway.
func Stdio(ctx context.Context, c *api.Client, opt StdioOptions, in io.Reader, out io.Writer) error {
	q := url.Values{}
	if opt.Name != "" {
		q.Set("name", opt.Name)
	}
	if opt.Channel {
		q.Set("channel", "1")
	}
	path := "/mcp"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	rwc, err := c.Upgrade(ctx, path, UpgradeProtocol)
	if err != nil {
		return err
	}
	defer rwc.Close()
	stop := context.AfterFunc(ctx, func() { _ = rwc.Close() })
	defer stop()
	// The client closing its end (stdin EOF) ends the session at once:
	// closing the stream ends the copy below too.
	go func() {
		_, _ = io.Copy(rwc, in)
		_ = rwc.Close()
	}()
	_, err = io.Copy(out, rwc)
	if err != nil && (errors.Is(err, io.ErrClosedPipe) || ctx.Err() != nil || isClosed(err)) {
		return nil
	}
	return err
}

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}
