package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/uds"
)

// claudeSink is a bare Go peer socket registered in a World as a Claude
// Code session (registry entry and key file under this process's pid, the
// socket's listener): it checks each connection's auth line and reports
// every user frame it reads on got. Nothing else: no receipts, no
// admission, so it costs the same for either sender.
type claudeSink struct {
	name   string
	path   string
	token  string
	got    chan struct{}
	faults atomic.Int64 // connections whose first line was not our auth line
}

// startClaudeSink registers a sink named name in w. One per World: the
// registry holds one entry per pid.
func startClaudeSink(e *Env, w *World, name string) (*claudeSink, error) {
	pid := os.Getpid()
	s := &claudeSink{name: name, path: claude.SocketPath(w.Runtime, "", pid, os.Geteuid()), got: make(chan struct{}, 1<<16)}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	s.token = hex.EncodeToString(b)
	if err := safefile.EnsureDir(filepath.Dir(s.path)); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", s.path)
	if err != nil {
		return nil, err
	}
	e.Cleanup(func() { ln.Close() })
	go s.serve(ln)
	return s, registerClaude(w, pid, name, s.path, s.token)
}

func (s *claudeSink) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go s.read(c)
	}
}

func (s *claudeSink) read(c net.Conn) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 64<<10)
	want := []byte(`{"type":"auth","token":"` + s.token + `"}`)
	first := true
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return // a liveness probe sends nothing; any sender ends with EOF
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		if first {
			first = false
			if !bytes.Equal(line, want) {
				s.faults.Add(1)
				return
			}
			continue
		}
		if bytes.Contains(line, []byte(`"type":"user"`)) {
			s.got <- struct{}{}
		}
	}
}

func (s *claudeSink) wait(ctx context.Context, n int) error {
	return waitFrames(ctx, s.got, n, &s.faults)
}

// frameSink is a sink that reports the user frames it reads.
type frameSink interface {
	// wait waits for n more frames.
	wait(ctx context.Context, n int) error
}

// waitFrames waits for n reports on got; 10 s without one is an error,
// which names the faults the sink counted.
func waitFrames(ctx context.Context, got <-chan struct{}, n int, faults *atomic.Int64) error {
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for range n {
		select {
		case <-got:
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C:
			return fmt.Errorf("the sink read no frame for 10 s (%d faults: bad auth lines or frames)", faults.Load())
		}
	}
	return nil
}

// rawFrame is what the raw sender writes: the sink's auth line and a user
// frame as Claude Code's SendMessage spells it, in one write.
func (s *claudeSink) rawFrame() []byte {
	ab, _ := json.Marshal(claude.Auth{Type: claude.TypeAuth, Token: s.token})
	env := claude.Envelope{From: "uds:/tmp/cc-socks/1.sock", FromSession: uuid.NewString(), FromName: "raw", FromMode: "prompting", Body: "bench"}
	fb, _ := claude.NewUserFrame("uds:/tmp/cc-socks/1.sock", uuid.NewString(), env, nil).Marshal()
	return append(append(append(ab, '\n'), fb...), '\n')
}

// rawSend is the floor: connect, auth line and frame in one write, close.
func rawSend(path string, payload []byte) error {
	c, err := net.Dial("unix", path)
	if err != nil {
		return err
	}
	_, err = c.Write(payload)
	return errors.Join(err, c.Close())
}

// registerClaude writes the registry entry and key file a Claude Code session
// of pid writes, naming the socket at path.
func registerClaude(w *World, pid int, name, path, token string) error {
	ticks, err := uds.StartTicks(pid)
	if err != nil {
		return err
	}
	id, err := uds.Identify(pid)
	if err != nil {
		return err
	}
	procStart := strconv.FormatUint(ticks, 10)
	domain := fmt.Sprintf("linux:%s:pid:[%d]", id.MachineID, id.PidNS)
	dir := filepath.Join(w.ConfigDir, "sessions")
	if err := safefile.EnsureDir(dir); err != nil {
		return err
	}
	kb, _ := json.Marshal(claude.KeyFile{PeerToken: token, ProcStart: procStart, PidDomain: domain})
	if err := safefile.WriteAtomic(filepath.Join(dir, claude.KeyFileName(pid, path)), kb); err != nil {
		return err
	}
	now := time.Now().UnixMilli()
	eb, _ := json.Marshal(claude.Entry{
		PID: pid, SessionID: uuid.NewString(), Cwd: "/", StartedAt: now, ProcStart: procStart,
		Version: "bench", PeerProtocol: 1, Kind: "interactive", Entrypoint: "cli", PidDomain: domain,
		MessagingSocketPath: path, Name: name, NameSource: "user", Status: "idle", UpdatedAt: now,
	})
	return safefile.WriteAtomic(filepath.Join(dir, strconv.Itoa(pid)+".json"), eb)
}
