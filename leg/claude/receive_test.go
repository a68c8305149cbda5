package claude

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/leg/uds"
)

// A blank line every 50 ms once re-armed the read deadline on each line, so
// a peer could hold a connection slot for ever with nothing to say. Only a
// line that parses extends it now, as on the Qwen leg.
func TestBlankLinesDoNotHoldAConnection(t *testing.T) {
	const timeout = 300 * time.Millisecond
	r := startRig(t, Config{Socket: uds.Limits{FirstLineTimeout: timeout, LineTimeout: timeout}})
	c, err := net.Dial("unix", r.p.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			if _, err := c.Write([]byte("\n")); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = c.Read(make([]byte, 1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("blank lines kept the connection open past its line timeout")
	}
}
