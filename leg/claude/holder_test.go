package claude

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

// A registry entry anyone of ours can write may name any socket. One whose
// socket is held by another process than the entry's is neither listed nor
// written to: not the message, not the auth line with the key's token.
func TestNothingIsSentToASocketItsEntryDoesNotHold(t *testing.T) {
	r := startRig(t, Config{})
	planted := listenSock(t, r.socks) // listened on by the test process
	pid, start := sleeper(t)          // the entry's process, which listens on nothing
	writeEntry(t, r.p.sessionsDir, pid, map[string]any{"procStart": start, "pidDomain": r.p.pidDomain,
		"messagingSocketPath": planted.path, "sessionId": uuid.NewString(), "name": "planted"})
	kb, err := json.Marshal(KeyFile{PeerToken: "planted-token", ProcStart: start, PidDomain: r.p.pidDomain})
	if err != nil {
		t.Fatal(err)
	}
	writeRaw(t, filepath.Join(r.p.sessionsDir, KeyFileName(pid, planted.path)), kb)

	ss, err := r.p.Sessions(testutil.Context(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(ss, func(s message.Session) bool { return s.PID == pid }) {
		t.Errorf("the planted entry is listed: %+v", ss)
	}
	_, err = r.p.Send(testutil.Context(t, 10*time.Second), message.Message{ID: uuid.NewString(), To: planted.addr, ToPID: pid, Body: "for the entry's process only"})
	var he *uds.HolderError
	if !errors.As(err, &he) || he.Got.PID != os.Getpid() || he.Want.PID != pid {
		t.Fatalf("Send = %v, want a HolderError naming listener %d and entry %d", err, os.Getpid(), pid)
	}
	// By address alone, the key file or else the entry names the pid.
	for _, drop := range []bool{false, true} {
		if drop {
			if err := os.Remove(filepath.Join(r.p.sessionsDir, KeyFileName(pid, planted.path))); err != nil {
				t.Fatal(err)
			}
		}
		_, err = r.p.Send(testutil.Context(t, 10*time.Second), message.Message{ID: uuid.NewString(), To: planted.addr, Body: "by address"})
		if !errors.Is(err, uds.ErrNotHolder) {
			t.Fatalf("Send by address (key file removed: %v) = %v, want ErrNotHolder", drop, err)
		}
	}
	// The idle subscription is refused the same way.
	if _, err := r.p.NotifyWhenIdle(testutil.Context(t, 10*time.Second), message.Session{Address: planted.addr, PID: pid}); !errors.Is(err, uds.ErrNotHolder) {
		t.Fatalf("NotifyWhenIdle = %v, want ErrNotHolder", err)
	}
	planted.settle(t)
	for _, c := range planted.lines() {
		if len(c) != 0 {
			t.Fatalf("the planted socket was sent %q", c)
		}
	}
	if !r.logs.has("belongs to another process") {
		t.Error("nothing logged about the socket's other owner")
	}
}

// The registry directory can be opened to others while we run. Its records
// are then neither listed nor dialed, the directory is left as it is, and
// the reason is logged; once the user repairs it, all is as before.
func TestARegistryDirectoryOthersMayWriteIsRefusedWhileRunning(t *testing.T) {
	r := startRig(t, Config{})
	target := listenSock(t, r.socks)
	dir := r.p.sessionsDir
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := r.p.Sessions(testutil.Context(t, 10*time.Second)); !errors.Is(err, uds.ErrUnsafeRegistry) {
		t.Fatalf("Sessions = %v, want ErrUnsafeRegistry", err)
	}
	_, err := r.p.Send(testutil.Context(t, 10*time.Second), message.Message{ID: uuid.NewString(), To: target.addr, Body: "x"})
	if !errors.Is(err, uds.ErrUnsafeRegistry) {
		t.Fatalf("Send = %v, want ErrUnsafeRegistry", err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o777 {
		t.Fatalf("the directory was changed: %v %v", fi.Mode(), err)
	}
	if !r.logs.has("session registry directory refused") {
		t.Error("the refusal was not logged")
	}
	target.settle(t)
	if n := len(target.frames(t)); n != 0 {
		t.Fatalf("%d frames went out through a refused registry", n)
	}

	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := r.p.Sessions(testutil.Context(t, 10*time.Second)); err != nil {
		t.Fatalf("Sessions after the repair = %v", err)
	}
	r.sendTo(t, target, message.ModeBypass, "after the repair")
}

func TestRegisterRefusesARegistryDirectoryOthersMayWrite(t *testing.T) {
	env := newRegEnv(t)
	if err := os.MkdirAll(env.sessionsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(env.sessionsDir(), 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Register(env.config()); !errors.Is(err, uds.ErrUnsafeRegistry) {
		t.Fatalf("Register = %v, want ErrUnsafeRegistry", err)
	}
	if fi, err := os.Stat(env.sessionsDir()); err != nil || fi.Mode().Perm() != 0o777 {
		t.Fatalf("the directory was changed: %v %v", fi.Mode(), err)
	}
}
