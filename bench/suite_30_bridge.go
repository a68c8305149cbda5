package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/qwen"
)

func init() { register("bridge", bridgeRows) }

// bridgeRows: a bare Claude Code sender writes to the alias the bridge
// publishes for a Qwen inbox (the alias worker, the router's bridge and
// the Qwen leg in between) until the inbox has read the frame, beside a
// bare sender writing the inbox directly. An alias admits a burst of 32
// from all senders and then one a second (Claude Code's limits), so each
// inbox takes a few dozen messages, and several inboxes (each its alias
// worker) take turns: enough for a median. The sender is a registered
// Claude Code session, as it would be, and its alias on the Qwen side is
// in place before the first message, as it is once the bridge has
// synced.
func bridgeRows(ctx context.Context, e *Env) ([]Row, error) {
	st, err := openStage(ctx, e, "bench-qwen-0", startQwenSink) // --bridge is the default
	if err != nil {
		return nil, err
	}
	w, g := st.W, st.G
	sinks := []*qwenSink{st.Sink}
	for i := 1; i < e.N(6, 1); i++ {
		s, err := startQwenSink(e, w, fmt.Sprintf("bench-qwen-%d", i))
		if err != nil {
			return nil, err
		}
		sinks = append(sinks, s)
	}
	reply, err := startSender(e, w)
	if err != nil {
		return nil, err
	}
	if err := g.WaitListed(ctx, senderName); err != nil {
		return nil, err
	}
	if err := waitQwenAlias(ctx, w, senderName); err != nil {
		return nil, err
	}
	var lat [2]Latencies
	for _, sink := range sinks {
		alias, token, err := waitAlias(ctx, w, sink.name)
		if err != nil {
			return nil, err
		}
		bridged := func(i int) error {
			return rawSend(alias, claudeFrame(token, reply, fmt.Sprintf("bridged %d %s", i, uuid.NewString()[:8])))
		}
		direct := func(i int) error {
			b, err := sink.rawFrame(fmt.Sprintf("direct %d", i))
			if err != nil {
				return err
			}
			return rawSend(sink.path, b)
		}
		if _, err := sequential(ctx, sink, 2, bridged, direct); err != nil {
			return nil, err
		}
		got, err := sequential(ctx, sink, e.N(28, 3), bridged, direct)
		if err != nil {
			return nil, err
		}
		lat[0], lat[1] = append(lat[0], got[0]...), append(lat[1], got[1]...)
	}
	return []Row{
		latencyRow(fmt.Sprintf("Claude -> alias -> Qwen, bridged (latency, %d messages)", len(lat[0])), lat[0], lat[1], "raw socket to the inbox", 0.5, time.Millisecond),
	}, nil
}

// waitQwenAlias waits for the bridge's alias of name in the Qwen registry.
func waitQwenAlias(ctx context.Context, w *World, name string) error {
	dir := qwen.SessionsDir(w.QwenHome)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		ents, _ := os.ReadDir(dir)
		for _, de := range ents {
			b, err := os.ReadFile(filepath.Join(dir, de.Name()))
			if err != nil {
				continue
			}
			if r, err := qwen.ParseRecord(b); err == nil && r.Name == name && r.Kind == qwen.KindAlias {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no alias of %q in the Qwen registry", name)
}

// waitAlias waits for the bridge's alias of name in the Claude registry
// and returns its socket and peerToken.
func waitAlias(ctx context.Context, w *World, name string) (path, token string, err error) {
	dir := filepath.Join(w.ConfigDir, "sessions")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		ents, _ := os.ReadDir(dir)
		for _, de := range ents {
			if !strings.HasSuffix(de.Name(), ".json") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, de.Name()))
			if err != nil {
				continue
			}
			en, err := claude.ParseEntry(b)
			if err != nil || en.Name != name || en.Kind != claude.KindAlias || en.MessagingSocketPath == "" {
				continue
			}
			kb, err := os.ReadFile(filepath.Join(dir, claude.KeyFileName(en.PID, en.MessagingSocketPath)))
			if err != nil {
				continue
			}
			k, err := claude.ParseKeyFile(kb)
			if err != nil {
				continue
			}
			return en.MessagingSocketPath, k.PeerToken, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "", "", fmt.Errorf("no alias of %q in the Claude registry", name)
}

// claudeFrame is what Claude Code's SendMessage writes to a peer: the
// peer's auth line and a user frame whose envelope names the sender at
// its reply socket.
func claudeFrame(token, from, body string) []byte {
	ab, _ := json.Marshal(claude.Auth{Type: claude.TypeAuth, Token: token})
	env := claude.Envelope{From: from, FromSession: benchSession, FromName: senderName, FromMode: "prompting", Body: body}
	fb, _ := claude.NewUserFrame(from, uuid.NewString(), env, nil).Marshal()
	return append(append(append(ab, '\n'), fb...), '\n')
}

// benchSession is the bare sender's session id.
var benchSession = uuid.NewString()

// startSender registers this process as a Claude Code session named
// bench-sender, as the sender of a bridged message is one, listening on
// its socket for the receipts the bridge relays (and dropping them); it
// returns its uds: address.
func startSender(e *Env, w *World) (string, error) {
	pid := os.Getpid()
	path := claude.SocketPath(w.Runtime, "", pid, os.Geteuid())
	if err := safefile.EnsureDir(filepath.Dir(path)); err != nil {
		return "", err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return "", err
	}
	e.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
			}()
		}
	}()
	return addressing.UDS(path), registerClaude(w, pid, senderName, path, uuid.NewString())
}

// senderName is the bare Claude Code sender's name.
const senderName = "bench-sender"
