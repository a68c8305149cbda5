package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/sessiongateway/gateway/leg/uds"
)

// The HTTP floor is what the API rows stand on before the gateway does
// anything: a bare net/http server on a Unix socket, in a process of its
// own as the gateway is, answering POST /v1/messages by sending the
// request's body as it is (the raw sender's auth line and frame) to the
// sink. No name resolved, no guard, no receipt, no trace, no metric. Its
// modes tell where the API's time goes: the answer alone, the answer
// after the gateway's own socket send (uds.DialWrite: connect, write,
// half-close, wait for the receiver to close, which is how a message
// refused unread is told from one taken), and the answer once the frame
// is written (close without that wait).
const (
	floorAnswer    = "answer"    // nothing sent
	floorDialWrite = "dialwrite" // as the gateway sends to a Claude or Qwen inbox
	floorWritten   = "written"   // connect, write, close
)

// floorCommand is the bench's hidden subcommand that serves the floor:
// bench http-floor SOCKET SINK MODE.
const floorCommand = "http-floor"

// serveFloor serves the floor on sock until the process is killed.
func serveFloor(sock, sink, mode string) error {
	switch mode {
	case floorAnswer, floorDialWrite, floorWritten:
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err == nil {
			switch mode {
			case floorDialWrite:
				err = uds.DialWrite(r.Context(), sink, body)
			case floorWritten:
				err = rawSend(sink, body)
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"status":"sent"}`)
	}))
}

// floor is one running floor server.
type floor struct {
	cmd *exec.Cmd
	api *apiPool
}

// startFloor runs a floor server of this mode in w, sending to sink, and
// waits until it answers.
func (e *Env) startFloor(ctx context.Context, w *World, sink, mode string) (*floor, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(w.Root, "floor-"+mode+".sock")
	cmd := exec.Command(exe, floorCommand, sock, sink, mode)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	f := &floor{cmd: cmd, api: newAPIPool(sock)}
	e.Cleanup(func() {
		f.api.close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
			return f, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the %s floor is not answering: %w", mode, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// send posts frame and checks the answer.
func (f *floor) send(ctx context.Context, frame []byte) error {
	st, raw, err := f.api.do(ctx, "POST", "/v1/messages", frame)
	if err == nil && st != http.StatusAccepted {
		err = fmt.Errorf("the floor answered %d: %s", st, raw)
	}
	return err
}

// noFrames is a frameSink for senders that wait for their own frames.
type noFrames struct{}

func (noFrames) wait(context.Context, int) error { return nil }

// floorRows measure each floor beside the raw socket to the same sink,
// taking turns as the API rows do, one floor at a time (a server idle
// while another works would be woken for each of its messages, which the
// gateway's row does not pay), each until the sink has read its frame (the
// answer alone: until answered); the gateway's socket send also with k
// concurrent senders, as the API row.
func floorRows(ctx context.Context, e *Env, w *World, sink *claudeSink, k int) ([]Row, error) {
	frame := sink.rawFrame()
	raw := func(int) error { return rawSend(sink.path, frame) }
	waited := func(send func(int) error) func(int) error {
		return func(i int) error { return errors.Join(send(i), sink.wait(ctx, 1)) }
	}
	var rows []Row
	for _, mode := range []string{floorAnswer, floorDialWrite, floorWritten} {
		f, err := e.startFloor(ctx, w, sink.path, mode)
		if err != nil {
			return nil, err
		}
		via := func(int) error { return f.send(ctx, frame) }
		if mode != floorAnswer {
			via = waited(via)
		}
		// Each sender waits for its own frame: the answer alone sends none.
		senders := []func(int) error{waited(raw), via}
		if _, err := sequential(ctx, noFrames{}, e.N(200, 10), senders...); err != nil {
			return nil, err
		}
		n := e.N(5000, 100)
		cpu0 := procCPU(f.cmd.Process.Pid)
		lat, err := sequential(ctx, noFrames{}, n, senders...)
		if err != nil {
			return nil, err
		}
		cpu := (procCPU(f.cmd.Process.Pid) - cpu0) / time.Duration(n)
		gw, cp := lat[1].rate(), lat[0].rate()
		rows = append(rows, Row{Path: floorPaths[mode] + ", 1 sender (msg/s)",
			Gateway:     fmt.Sprintf("%s; p50 %s, p99 %s; CPU %s a message", gw, ms(lat[1].P(0.5)), ms(lat[1].P(0.99)), ms(cpu)),
			Counterpart: fmt.Sprintf("%s; p50 %s, p99 %s (raw socket)", cp, ms(lat[0].P(0.5)), ms(lat[0].P(0.99))),
			Ratio:       ratio(gw.PerSec(), cp.PerSec())})
		if mode != floorDialWrite {
			continue
		}
		var rawRate, floorRate Rate
		for range 2 { // alternating, as the API row
			r, err := concurrent(ctx, sink, k, e.N(4000, 64), raw)
			if err != nil {
				return nil, err
			}
			rawRate.N, rawRate.Span = rawRate.N+r.N, rawRate.Span+r.Span
			if r, err = concurrent(ctx, sink, k, e.N(4000, 64), func(int) error { return f.send(ctx, frame) }); err != nil {
				return nil, err
			}
			floorRate.N, floorRate.Span = floorRate.N+r.N, floorRate.Span+r.Span
		}
		rows = append(rows, Row{Path: fmt.Sprintf("%s, %d senders (msg/s)", floorPaths[mode], k), Gateway: floorRate.String(),
			Counterpart: fmt.Sprintf("%s (raw socket)", rawRate), Ratio: ratio(floorRate.PerSec(), rawRate.PerSec())})
	}
	return rows, nil
}

var floorPaths = map[string]string{
	floorAnswer:    "Floor: net/http answering alone",
	floorDialWrite: "Floor: net/http + the gateway's socket send",
	floorWritten:   "Floor: net/http + write and close",
}
