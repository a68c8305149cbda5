package fakedaemon

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// Bound is how long a client here waits on the socket before it gives up:
// a bound on a hung daemon, not a measure of a fast one.
const Bound = 60 * time.Second

// maxFrame caps one frame read back; stream lines are terminal repaints,
// and the daemon cuts off a subscriber more than 1 MiB behind.
const maxFrame = 4 << 20

// Exchange sends payload (one or more lines, as given) on a fresh
// connection and returns every line the daemon writes until it closes.
func Exchange(path string, payload []byte) ([]map[string]any, error) {
	c, err := net.DialTimeout("unix", path, Bound)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(Bound))
	// A daemon may answer and hang up before it has read all of payload
	// (ETOOLARGE): the answer still counts, so a write error is reported
	// only when there is none.
	_, werr := c.Write(payload)
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), maxFrame)
	var out []map[string]any
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return out, fmt.Errorf("daemon wrote a line that is not a JSON object: %q", sc.Text())
		}
		out = append(out, m)
	}
	if werr != nil {
		if len(out) == 0 {
			return nil, werr
		}
		return out, nil // the hang-up after the answer is expected then
	}
	return out, sc.Err()
}

// Do sends one request and returns its one answer.
func Do(path string, req any) (map[string]any, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	lines, err := Exchange(path, append(b, '\n'))
	if err != nil {
		return nil, err
	}
	if len(lines) != 1 {
		return nil, fmt.Errorf("want one answer, got %d: %v", len(lines), lines)
	}
	return lines[0], nil
}

// Subscription is an open subscribe connection.
type Subscription struct {
	c  net.Conn
	sc *bufio.Scanner
}

// Subscribe opens a subscription to a job; the first frame is its snapshot
// (or an error answer).
func Subscribe(path, short string, tail int) (*Subscription, error) {
	c, err := net.DialTimeout("unix", path, Bound)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(map[string]any{"proto": Proto, "op": "subscribe", "short": short, "tail": tail})
	if _, err := c.Write(append(b, '\n')); err != nil {
		c.Close()
		return nil, err
	}
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), maxFrame)
	return &Subscription{c: c, sc: sc}, nil
}

// Next reads the next frame; at the daemon's end of the stream it returns
// nil and no error.
func (s *Subscription) Next() (map[string]any, error) {
	_ = s.c.SetReadDeadline(time.Now().Add(Bound))
	if !s.sc.Scan() {
		return nil, s.sc.Err()
	}
	var m map[string]any
	if err := json.Unmarshal(s.sc.Bytes(), &m); err != nil {
		return nil, fmt.Errorf("frame is not a JSON object: %q", s.sc.Text())
	}
	return m, nil
}

// Close hangs up.
func (s *Subscription) Close() error { return s.c.Close() }
