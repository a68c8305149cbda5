package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

// qwenSink is a bare Qwen-protocol inbox published with a kind "external"
// record of this process: it checks each connection's auth line and that
// every user frame is pinned to its session, and reports each on got. It
// sends no receipts: neither sender waits for one (both wait only for the
// inbox to close the connection, which it does at the sender's EOF). Like
// the Claude sink it costs little and the same for every sender: an auth
// line spelt as both senders spell it is compared as bytes (any other
// goes through the protocol's own check), and a frame is decoded only as
// far as its type and pin.
type qwenSink struct {
	name      string
	sessionID string
	path      string
	rec       qwen.Record // its record, token included
	authLine  []byte      // the auth line as both senders spell it
	got       chan struct{}
	faults    atomic.Int64 // bad auth lines, unreadable or misaddressed frames
}

func startQwenSink(e *Env, w *World, name string) (*qwenSink, error) {
	s := &qwenSink{name: name, sessionID: uuid.NewString(), path: filepath.Join(w.Root, "q-"+name, "in.sock"), got: make(chan struct{}, 1<<16)}
	token := qwen.NewIPCToken()
	if err := safefile.EnsureDir(filepath.Dir(s.path)); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", s.path)
	if err != nil {
		return nil, err
	}
	e.Cleanup(func() { ln.Close() })
	auth := qwen.Authenticator{IPCToken: token}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.read(c, auth)
		}
	}()

	pid := os.Getpid()
	procStart, ok := qwen.ProcStartToken(pid)
	if !ok {
		return nil, fmt.Errorf("no procStart for pid %d", pid)
	}
	ns, err := uds.PidNamespace(pid)
	if err != nil {
		return nil, err
	}
	rec := qwen.Record{PID: pid, ProcStart: procStart, PidNS: ns, SessionID: s.sessionID, Cwd: w.Root,
		Name: name, StartedAt: time.Now().UnixMilli(), Kind: qwen.KindExternal, IPCPath: s.path, IPCToken: token}
	s.rec = rec
	if s.authLine, err = (qwen.Auth{Token: token}).Marshal(); err != nil {
		return nil, err
	}
	raw, err := rec.Marshal()
	if err != nil {
		return nil, err
	}
	dir := qwen.SessionsDir(w.QwenHome)
	if err := safefile.EnsureDir(dir); err != nil {
		return nil, err
	}
	return s, safefile.WriteAtomic(filepath.Join(dir, qwen.RecordFileName(pid, qwen.NewSuffix())), raw)
}

func (s *qwenSink) read(c net.Conn, auth qwen.Authenticator) {
	defer c.Close() // at the sender's EOF: what ends its wait
	r := readers.Get().(*bufio.Reader)
	r.Reset(c)
	defer func() { r.Reset(nil); readers.Put(r) }()
	authed := false
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		if qwen.IsBlank(line) {
			continue
		}
		if !authed {
			if !bytes.Equal(bytes.TrimSuffix(line, []byte("\n")), s.authLine) {
				if _, ok := auth.Authenticate(line); !ok {
					s.faults.Add(1)
					return
				}
			}
			authed = true
			continue
		}
		var f struct {
			Type        string `json:"type"`
			ToSessionID string `json:"toSessionId"`
		}
		switch err := json.Unmarshal(line, &f); {
		case err != nil:
			s.faults.Add(1)
		case f.Type != "user": // a receipt: nothing here sent anything to answer
		case f.ToSessionID != s.sessionID:
			s.faults.Add(1)
		default:
			s.got <- struct{}{}
		}
	}
}

// readers hold a line of up to 64 KiB each, kept from one connection to
// the next.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

func (s *qwenSink) wait(ctx context.Context, n int) error {
	return waitFrames(ctx, s.got, n, &s.faults)
}

// rawFrame is what a bare Qwen sender writes: the inbox's auth line and a
// user frame pinned to its session, in one write.
func (s *qwenSink) rawFrame(body string) ([]byte, error) {
	f := qwen.NewUserFrame(qwen.Sender{Name: "raw", Mode: message.ModePrompting}, s.rec, body)
	return qwen.Payload(s.rec.IPCToken, f)
}
