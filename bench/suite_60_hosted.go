package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/leg/hosted"
	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
)

func init() { register("hosted", hostedRows) }

const (
	hostedPrompt  = "bench: say something"
	hostedAnswer  = "bench answer"
	hostedMode    = "default"
	hostedTimeout = 60 * time.Second // for one start's first assistant text
	hostedGrace   = 3 * time.Second  // for a CLI to end after each step of its stop
)

// hostedRows: POST /v1/local/sessions with a prompt until the session's
// first event arrives on /v1/events, and until its first assistant text
// does, beside the real Claude Code started by hand with the leg's own
// command line and environment (hosted.Command) and the same prompt
// written to its stdin, until its first stdout line and its first
// assistant line with text. Both run against one fake model server,
// taking turns, each start stopped before the next. Without the CLI the
// row says how to install it; under GATEWAY_INTEROP=1 or CI=true
// (scripts/test.sh installs it first) that is a failure.
func hostedRows(ctx context.Context, e *Env) ([]Row, error) {
	bin, err := claudecli.Bin()
	if err != nil {
		if testutil.Strict() {
			return nil, fmt.Errorf("%v (GATEWAY_INTEROP=1 or CI=true: the hosted rows must run)", err)
		}
		return []Row{{Path: "POST /v1/local/sessions -> hosted Claude Code's first event (latency)", Gateway: "n/a: " + err.Error()}}, nil
	}
	h, err := startHostedBench(ctx, e, bin)
	if err != nil {
		return nil, err
	}
	n := e.N(20, 2)
	var cpu time.Duration
	var posted, stream, gwFirst, gwText, rawFirst, rawText Latencies
	var gwKinds, rawKinds []string
	for i := range 1 + n { // the first of each warms the disk cache and the CLI's config
		for turn := range 2 { // alternating, so neither always runs first
			if (i+turn)%2 == 0 {
				r, err := h.viaGateway(ctx, fmt.Sprintf("bench-%d", i))
				if err != nil {
					return nil, err
				}
				if i > 0 {
					posted, stream = append(posted, r.posted), append(stream, r.stream)
					gwFirst, gwText = append(gwFirst, r.first), append(gwText, r.text)
					gwKinds, cpu = append(gwKinds, r.kind), cpu+r.cpu
				}
				continue
			}
			r, err := h.byHand(ctx)
			if err != nil {
				return nil, err
			}
			if i > 0 {
				rawFirst, rawText = append(rawFirst, r.first), append(rawText, r.text)
				rawKinds = append(rawKinds, r.kind)
			}
		}
	}
	byHand := h.version + " started by hand, same command line"
	first := latencyRow(fmt.Sprintf("POST /v1/local/sessions -> hosted Claude Code's first event (latency, %d starts)", n),
		gwFirst, rawFirst, byHand+"; its first stdout line", 0, 0)
	first.Gateway += fmt.Sprintf("; POST answered p50 %s; read line to event here p50 %s; first event %s",
		ms(posted.P(0.5)), ms(stream.P(0.5)), kindsOf(gwKinds))
	first.Counterpart += "; first line " + kindsOf(rawKinds)
	text := latencyRow(fmt.Sprintf("POST /v1/local/sessions -> hosted Claude Code's first assistant text (latency, %d starts)", n),
		gwText, rawText, byHand, 0, 0)
	text.Gateway += fmt.Sprintf("; gateway CPU %s a start", ms(cpu/time.Duration(n)))
	return []Row{first, text}, nil
}

// kindsOf names the event types seen first, each once.
func kindsOf(kinds []string) string {
	k := slices.Compact(slices.Sorted(slices.Values(kinds)))
	return strings.Join(k, ", ")
}

// hostedBench is one gateway hosting Claude Code against a fake model,
// its event stream, and what the CLI started by hand shares with it.
type hostedBench struct {
	w       *World
	bin     string
	version string // what bin --version says
	cwd     string
	c       *api.Client
	g       *Gateway
	seen    <-chan hostedSeen
	watch   func() error // why the event stream ended, once seen is closed
}

func startHostedBench(ctx context.Context, e *Env, bin string) (*hostedBench, error) {
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", bin, err)
	}
	version := "claude " + strings.TrimSpace(strings.SplitN(string(out), " ", 2)[0])
	model, err := fakeanthropic.Listen(fakeanthropic.Always(fakeanthropic.Text(hostedAnswer)), nil)
	if err != nil {
		return nil, err
	}
	e.Cleanup(func() { model.Close() })
	w, err := e.NewWorld()
	if err != nil {
		return nil, err
	}
	w.Extra = []string{"ANTHROPIC_API_KEY=" + claudecli.DummyAPIKey, "ANTHROPIC_BASE_URL=" + model.URL(),
		"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	cwd := filepath.Join(w.Root, "work")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		return nil, err
	}
	g, err := e.StartGateway(ctx, w, "--legs", "none", "--claude-path", bin)
	if err != nil {
		return nil, err
	}
	c := api.NewUnixClient(filepath.Join(w.StateDir, "gateway.sock"))
	seen, watch := watchHosted(ctx, e, c)
	return &hostedBench{w: w, bin: bin, version: version, cwd: cwd, c: c, g: g, seen: seen, watch: watch}, nil
}

// hostedSeen is one event of a hosted session, as the event stream gave it.
type hostedSeen struct {
	name string
	kind string
	text bool      // an assistant message with text
	at   time.Time // when it arrived here
	read time.Time // when the gateway read its line (the event's time)
}

// watchHosted follows /v1/events from its start (the replay covers what
// came before the stream was open) and hands on the hosted sessions'
// events, stamped as they arrive. The channel closes when the stream
// ends; the func then says why.
func watchHosted(ctx context.Context, e *Env, c *api.Client) (<-chan hostedSeen, func() error) {
	ch := make(chan hostedSeen, 4096)
	wctx, cancel := context.WithCancel(ctx)
	var werr error
	go func() {
		defer close(ch)
		werr = c.Watch(wctx, 0, func(ev message.Event) error {
			if ev.Type != message.EventRemote || ev.Leg != message.ProtocolHosted || ev.Remote == nil {
				return nil
			}
			s := hostedSeen{name: strings.TrimPrefix(ev.Remote.Address, hosted.AddressPrefix), kind: ev.Remote.Kind,
				text: ev.Remote.Kind == "assistant" && ev.Remote.Text != "", at: time.Now(), read: ev.Time}
			select {
			case ch <- s:
				return nil
			case <-wctx.Done():
				return wctx.Err()
			}
		})
	}()
	e.Cleanup(func() {
		cancel()
		for range ch { // until the watcher has returned
		}
	})
	return ch, func() error { return werr }
}

// started is one start's figures, from the moment it was asked for.
type started struct {
	posted time.Duration // the API's answer (the gateway path only)
	first  time.Duration // the first event, or stdout line
	text   time.Duration // the first assistant text
	kind   string        // the first event's type
	stream time.Duration // from the gateway's read of the first line to its event's arrival here
	cpu    time.Duration // the gateway's, until the first assistant text
}

// viaGateway starts the hosted session name through the API and waits
// for its events; it is stopped before this returns.
func (h *hostedBench) viaGateway(ctx context.Context, name string) (started, error) {
	var r started
	cpu0 := h.g.CPU()
	t0 := time.Now()
	_, err := h.c.StartSession(ctx, message.StartSpec{Agent: message.AgentClaude, Cwd: h.cwd, Name: name,
		Prompt: hostedPrompt, PermissionMode: hostedMode})
	if err != nil {
		return r, fmt.Errorf("POST /v1/local/sessions: %w", err)
	}
	r.posted = time.Since(t0)
	timeout := time.NewTimer(hostedTimeout)
	defer timeout.Stop()
	for r.text == 0 {
		select {
		case s, ok := <-h.seen:
			if !ok {
				return r, fmt.Errorf("the event stream ended: %v", h.watch())
			}
			if s.name != name {
				continue // a session stopped before, still saying its last
			}
			if r.first == 0 {
				r.first, r.kind, r.stream = s.at.Sub(t0), s.kind, s.at.Sub(s.read)
			}
			if s.text {
				r.text = s.at.Sub(t0)
			}
		case <-timeout.C:
			return r, fmt.Errorf("hosted session %s said nothing in %v (first event after %v); gateway logs:\n%s", name, hostedTimeout, r.first, h.g.logs)
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}
	r.cpu = h.g.CPU() - cpu0
	if _, err := h.c.StopSession(ctx, name); err != nil {
		return r, fmt.Errorf("stopping hosted session %s: %w", name, err)
	}
	return r, nil
}

// byHand runs the CLI as the hosted leg does (its command line and
// environment, the prompt on stdin, a process group of its own) and reads
// its stdout; it is stopped before this returns.
func (h *hostedBench) byHand(ctx context.Context) (started, error) {
	var r started
	sid := uuid.NewString()
	args, env, err := hosted.Command(message.AgentClaude, hostedMode, "", sid, h.w.Env())
	if err != nil {
		return r, err
	}
	line, err := wire.UserEvent(uuid.NewString(), sid, hostedPrompt)
	if err != nil {
		return r, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return r, err
	}
	defer outR.Close()
	stderr := &capped{max: 64 << 10}
	cmd := exec.Command(h.bin, args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = h.cwd, env, outW, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		outW.Close()
		return r, err
	}
	t0 := time.Now()
	err = cmd.Start()
	outW.Close()
	if err != nil {
		return r, fmt.Errorf("starting %s: %w", h.bin, err)
	}
	exited := make(chan struct{})
	defer endByHand(cmd, stdin, outR, exited)
	// A CLI that says nothing, or a bench interrupted, ends the CLI, which
	// ends the read below.
	kill := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	hung := time.AfterFunc(hostedTimeout, kill)
	defer hung.Stop()
	defer context.AfterFunc(ctx, kill)()
	if _, err := stdin.Write(append(line, '\n')); err != nil {
		return r, fmt.Errorf("writing the prompt: %w", err)
	}
	rd := wire.NewNDJSONReader(outR, 8<<20)
	for r.text == 0 {
		m, err := rd.Next()
		if err != nil {
			var le *wire.LineError
			if errors.As(err, &le) {
				continue // as the leg does: skipped
			}
			return r, fmt.Errorf("the CLI started by hand ended before its first assistant text (%v): %v\n%s", ctx.Err(), err, stderr)
		}
		at := time.Since(t0)
		if m.Kind == wire.KindKeepAlive {
			continue
		}
		if r.first == 0 {
			r.first, r.kind = at, m.Type
		}
		if m.Kind == wire.KindAssistant && m.Assistant.Content.Text() != "" {
			r.text = at
		}
	}
	return r, ctx.Err()
}

// endByHand stops a CLI started by hand as the leg stops one: stdin
// closed, then SIGTERM to its group, then SIGKILL, each after a grace;
// what it still writes is read and dropped meanwhile.
func endByHand(cmd *exec.Cmd, stdin io.Closer, out io.Reader, exited chan struct{}) {
	stdin.Close()
	go func() {
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(exited)
	}()
	for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
		if sig != 0 {
			_ = syscall.Kill(-cmd.Process.Pid, sig)
		}
		select {
		case <-exited:
			return
		case <-time.After(hostedGrace):
		}
	}
	<-exited
}
