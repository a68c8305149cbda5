package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/sessiongateway/gateway/message"
)

// ReadyFD is the descriptor on which a child says it is registered (one
// line, "ready ADDRESS"); the child's stdin is its life line: when it ends
// (the parent exited, however), the child deregisters and exits.
const ReadyFD = 3

// Protocols are the demo sessions demo-local starts, in order.
var Protocols = []message.Protocol{message.ProtocolClaude, message.ProtocolQwen}

// LocalConfig sets up demo-local.
type LocalConfig struct {
	// Command is the child that runs one demo session (the gateway binary
	// re-executed, which calls RunChild). Its stdin and ReadyFD are set
	// here; stdout and stderr default to ours.
	Command func(message.Protocol) *exec.Cmd
	Out     io.Writer // the start-up lines and what to try next
	// JSON prints, once both are registered, one JSON object (Started),
	// and has the sessions print JSON lines.
	JSON bool
	// Cmd spells a suggested command ("sessions") as the user types it;
	// default "gateway " + words.
	Cmd func(words string) string
	// Patience bounds the wait for a child to register; default 20 s.
	Patience time.Duration
}

// child is one demo session's process.
type child struct {
	name  string
	proto message.Protocol
	cmd   *exec.Cmd
	life  *os.File // our end of its stdin: closing it stops the child
	done  chan struct{}
	err   error // how it exited, once done is closed
	ready chan string
}

// stopGrace bounds how long a child may take to deregister once told.
const stopGrace = 10 * time.Second

// RunLocal starts the demo sessions, says what to try, and runs until ctx
// ends (or a session stops on its own, an error); it always stops and reaps
// every child it started.
func RunLocal(ctx context.Context, cfg LocalConfig) error {
	if cfg.Patience == 0 {
		cfg.Patience = 20 * time.Second
	}
	if cfg.Cmd == nil {
		cfg.Cmd = func(words string) string { return "gateway " + words }
	}
	var kids []*child
	defer func() {
		for _, k := range kids {
			k.stop()
		}
	}()
	for _, p := range Protocols {
		cmd := cfg.Command(p)
		if cfg.JSON {
			cmd.Args = append(cmd.Args, "--json")
		}
		k, err := start(NameOf(p), p, cmd)
		if err != nil {
			return err
		}
		kids = append(kids, k)
	}
	timeout := time.NewTimer(cfg.Patience)
	defer timeout.Stop()
	addrs := make([]string, len(kids))
	for i, k := range kids {
		select {
		case addrs[i] = <-k.ready:
		case <-k.done:
			return fmt.Errorf("%s stopped before it registered: %v", k.name, k.exit())
		case <-timeout.C:
			return fmt.Errorf("%s did not register within %v", k.name, cfg.Patience)
		case <-ctx.Done():
			return nil
		}
	}
	explain(cfg, kids, addrs)
	stopped := make(chan *child, len(kids))
	for _, k := range kids {
		go func() { <-k.done; stopped <- k }()
	}
	select {
	case <-ctx.Done():
		return nil
	case k := <-stopped:
		return fmt.Errorf("%s stopped: %v", k.name, k.exit())
	}
}

// start runs cmd with a life line on stdin and a ready pipe on ReadyFD.
func start(name string, p message.Protocol, cmd *exec.Cmd) (*child, error) {
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		lifeR.Close()
		lifeW.Close()
		return nil, err
	}
	cmd.Stdin = lifeR
	cmd.ExtraFiles = []*os.File{readyW} // fd 3 = ReadyFD
	if cmd.Stdout == nil {
		cmd.Stdout = os.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	err = cmd.Start()
	lifeR.Close()
	readyW.Close()
	if err != nil {
		lifeW.Close()
		readyR.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	k := &child{name: name, proto: p, cmd: cmd, life: lifeW, done: make(chan struct{}), ready: make(chan string, 1)}
	go func() { k.err = cmd.Wait(); close(k.done) }()
	go func() {
		defer readyR.Close()
		// One short line; the reader is bounded by bufio's buffer.
		line, err := bufio.NewReaderSize(readyR, 512).ReadString('\n')
		if addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready "); ok && err == nil {
			k.ready <- addr
		}
	}()
	return k, nil
}

// stop closes the child's life line and waits for it to deregister and
// exit, killing it after stopGrace.
func (k *child) stop() {
	k.life.Close()
	select {
	case <-k.done:
	case <-time.After(stopGrace):
		_ = k.cmd.Process.Kill()
		<-k.done
	}
}

func (k *child) exit() error {
	if k.err == nil {
		return errors.New("exited")
	}
	return k.err
}

// Started is what demo-local prints under --json once both sessions are
// registered.
type Started struct {
	Sessions []Started1 `json:"sessions"`
}

// Started1 is one demo session in Started.
type Started1 struct {
	Name     string           `json:"name"`
	Protocol message.Protocol `json:"protocol"`
	PID      int              `json:"pid"`
	Address  string           `json:"address"`
}

func explain(cfg LocalConfig, kids []*child, addrs []string) {
	w := cfg.Out
	if w == nil {
		return
	}
	var st Started
	for i, k := range kids {
		st.Sessions = append(st.Sessions, Started1{Name: k.name, Protocol: k.proto, PID: k.cmd.Process.Pid, Address: addrs[i]})
	}
	if cfg.JSON {
		b, _ := json.Marshal(st)
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	for _, s := range st.Sessions {
		fmt.Fprintf(w, "%s registered (pid %d) at %s\n", s.Name, s.PID, s.Address)
	}
	fmt.Fprintf(w, `
Each answers what it is sent, by name, as a real session would. With a
gateway running (%s), try in another terminal:

  %s
  %s
  %s
  %s
  %s    (%s asks %s, through the bridge)

Ctrl-C stops both and removes their registrations.
`, cfg.Cmd("serve"), cfg.Cmd("sessions"), cfg.Cmd(`send `+ClaudeName+` "hello" --wait`), cfg.Cmd(`send `+QwenName+` "hello" --wait`),
		cfg.Cmd("watch"), cfg.Cmd(`send `+ClaudeName+` "ask `+QwenName+` hi"`), ClaudeName, QwenName)
}

// RunChild is a child's side: it runs the demo session for p until ctx
// ends or stdin (the parent's life line) closes, and writes "ready ADDRESS"
// on ReadyFD once registered.
func RunChild(ctx context.Context, p message.Protocol, version string, out io.Writer, asJSON bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	ready := os.NewFile(ReadyFD, "demo-ready")
	return RunSession(ctx, SessionConfig{Protocol: p, Version: version, Out: out, JSON: asJSON,
		Registered: func(addr string) {
			if ready != nil {
				_, _ = fmt.Fprintf(ready, "ready %s\n", addr)
				ready.Close()
			}
		}})
}
