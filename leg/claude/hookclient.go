package claude

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/sessiongateway/gateway/internal/jsonx"
)

// HookAckWithin is how long `gateway hook` waits for the gateway to take
// a request, from its start: with the gateway down, hung or unreachable,
// the hook ends with no decision well within 2 s, and the CLI asks at its
// terminal.
const HookAckWithin = 1500 * time.Millisecond

// HookEndpointListening says whether a gateway takes hooks at socket.
func HookEndpointListening(ctx context.Context, socket string) bool {
	d := net.Dialer{Timeout: HookAckWithin}
	conn, err := d.DialContext(ctx, "unix", socket)
	if err == nil {
		conn.Close()
	}
	return err == nil
}

// RunHook is `gateway hook EVENT`: it reads the hook's input from stdin,
// hands it to the hook endpoint at socket and, for a PermissionRequest,
// writes the decision the gateway answers to stdout. It never decides
// anything itself: every failure (no gateway, a refusal, input it cannot
// read, the gateway ending) is no decision, an empty stdout, and the
// reason comes back as the error for stderr.
func RunHook(ctx context.Context, socket, event string, stdin io.Reader, stdout io.Writer) error {
	start := time.Now()
	in, err := io.ReadAll(io.LimitReader(stdin, DefaultMaxHookInput+1))
	if err != nil {
		return fmt.Errorf("reading the hook's input: %w", err)
	}
	if len(in) > DefaultMaxHookInput {
		return fmt.Errorf("the hook's input is over %d MiB; the terminal asks", DefaultMaxHookInput>>20)
	}
	if !json.Valid(in) {
		return errors.New("the hook's input is not JSON")
	}
	line, err := jsonx.Marshal(HookRequest{V: 1, Event: event, Input: in})
	if err != nil {
		return err
	}
	d := net.Dialer{Timeout: HookAckWithin}
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return fmt.Errorf("no gateway at %s (gateway serve is not running?): %w", socket, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	_ = conn.SetDeadline(start.Add(HookAckWithin))
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("the gateway did not take the hook: %w", err)
	}
	br := bufio.NewScanner(conn)
	br.Buffer(make([]byte, 4<<10), maxHookReply)
	ack, err := readReply(br)
	if err != nil {
		return fmt.Errorf("the gateway did not answer in time: %w", err)
	}
	if !ack.OK {
		return fmt.Errorf("the gateway refused the hook: %s", ack.Error)
	}
	if event != HookPermissionRequest {
		return nil
	}
	// From here the wait is the CLI's to bound: its hook timeout ends us.
	_ = conn.SetDeadline(time.Time{})
	final, err := readReply(br)
	if err != nil {
		return fmt.Errorf("the gateway ended before an answer: %w", err)
	}
	if len(final.Output) == 0 || string(final.Output) == "null" {
		if final.Reason != "" {
			return errors.New(final.Reason)
		}
		return nil
	}
	if !json.Valid(final.Output) {
		return errors.New("the gateway's answer is not JSON")
	}
	_, err = stdout.Write(append([]byte(final.Output), '\n'))
	return err
}

// maxHookReply bounds one line from the gateway: a decision carries at most
// an edited tool input.
const maxHookReply = DefaultMaxHookInput + 64<<10

func readReply(sc *bufio.Scanner) (HookReply, error) {
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return HookReply{}, err
		}
		return HookReply{}, io.EOF
	}
	var r HookReply
	if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
		return HookReply{}, fmt.Errorf("a line from the gateway is not a reply: %w", err)
	}
	return r, nil
}
