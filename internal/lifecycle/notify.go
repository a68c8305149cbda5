package lifecycle

import (
	"fmt"
	"net"
	"strings"
)

// Notify tells a service manager how the start and the stop go, one state
// line at a time ("READY=1", "STOPPING=1"); nil tells nobody.
type Notify func(state string) error

// SystemdNotify writes states to the datagram socket systemd names in
// $NOTIFY_SOCKET (Type=notify units), as sd_notify(3) does: a path, or an
// abstract name starting with @. An empty socket gives a nil Notify.
func SystemdNotify(socket string) Notify {
	if socket == "" {
		return nil
	}
	name := socket
	if strings.HasPrefix(name, "@") {
		name = "\x00" + name[1:]
	}
	addr := &net.UnixAddr{Name: name, Net: "unixgram"}
	return func(state string) error {
		c, err := net.DialUnix("unixgram", nil, addr)
		if err != nil {
			return fmt.Errorf("NOTIFY_SOCKET: %w", err)
		}
		defer c.Close()
		if _, err := c.Write([]byte(state)); err != nil {
			return fmt.Errorf("NOTIFY_SOCKET: %w", err)
		}
		return nil
	}
}

// send tells n state, logging a failure: a service manager that is not
// listening must not stop the gateway.
func (p *Parts) send(state string) {
	if p.Notify == nil {
		return
	}
	if err := p.Notify(state); err != nil {
		p.Log.Warn("service manager not told", "state", state, "err", err)
	}
}
