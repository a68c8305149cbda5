package claude

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/clock"
)

// spooled writes data into dir as name and returns its descriptor.
func spooled(t *testing.T, dir, name string, data []byte) message.Attachment {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return message.Attachment{Path: p, FileName: name, FileSize: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// sendAttached sends one user frame carrying atts to the rig, with the
// peer token when authed, and returns the message that arrives.
func sendAttached(t *testing.T, r *rig, authed bool, atts []message.Attachment) message.Message {
	t.Helper()
	s := listenSock(t, r.socks)
	id := uuid.NewString()
	f := NewUserFrame(s.addr, id, Envelope{From: s.addr, FromName: "tester", FromMode: "prompting", Body: "files " + id}, atts)
	var lines [][]byte
	if authed {
		lines = append(lines, authLine(t, r.p.peerToken))
	}
	dial(t, r.p.SocketPath(), append(lines, marshal(t, f))...)
	ev := r.next(t, func(ev message.Event) bool { return ev.Type == message.EventMessage && ev.Message.ID == id })
	return *ev.Message
}

func TestSixteenNamesForOneContentAreKeptOnce(t *testing.T) {
	cfg := Config{ConfigDir: t.TempDir(), UploadsDir: filepath.Join(t.TempDir(), "uploads")}
	r := startRig(t, cfg)
	spool := filepath.Join(cfg.ConfigDir, "file-transfers")
	data := []byte(strings.Repeat("attached ", 1000))
	a := spooled(t, spool, "a.txt", data)
	b := spooled(t, spool, "b.txt", data) // the same content under another name
	bad := spooled(t, spool, "bad.txt", []byte("x"))
	bad.SHA256 = strings.Repeat("0", 64)
	atts := []message.Attachment{b, bad}
	for range MaxFilesPerMessage - 2 {
		atts = append(atts, a)
	}
	m := sendAttached(t, r, true, atts)
	if len(m.Attachments) != MaxFilesPerMessage {
		t.Fatalf("%d attachments, want %d", len(m.Attachments), MaxFilesPerMessage)
	}
	kept := filepath.Join(cfg.UploadsDir, a.SHA256)
	for i, got := range m.Attachments {
		if i == 1 {
			if got.Refused != message.AttachmentInvalid || got.Path != "" {
				t.Errorf("the mismatched descriptor: %+v, want refused as invalid", got)
			}
			continue
		}
		if got.Refused != "" || got.Path != kept {
			t.Errorf("attachment %d: %+v, want kept at %s", i, got, kept)
		}
	}
	if names := entries(t, cfg.UploadsDir); len(names) != 1 || names[0] != a.SHA256 {
		t.Fatalf("uploads holds %v, want the one content", names)
	}
	if got, _ := os.ReadFile(kept); string(got) != string(data) {
		t.Fatal("the kept copy differs from the sent file")
	}
}

func TestAttachmentsOfUnauthenticatedOrRefusedMessagesAreNeverRead(t *testing.T) {
	t.Run("an unauthenticated sender", func(t *testing.T) {
		cfg := Config{ConfigDir: t.TempDir(), UploadsDir: filepath.Join(t.TempDir(), "uploads")}
		r := startRig(t, cfg)
		a := spooled(t, filepath.Join(cfg.ConfigDir, "file-transfers"), "a.txt", []byte("secret-ish"))
		m := sendAttached(t, r, false, []message.Attachment{a, a})
		for _, got := range m.Attachments {
			if got.Refused != message.AttachmentUnauthenticated || got.Path != "" {
				t.Fatalf("attachment %+v, want refused as unauthenticated", got)
			}
		}
		if names := entries(t, cfg.UploadsDir); len(names) != 0 {
			t.Fatalf("uploads holds %v", names)
		}
	})
	t.Run("a message the policy refuses", func(t *testing.T) {
		cfg := Config{ConfigDir: t.TempDir(), UploadsDir: filepath.Join(t.TempDir(), "uploads"), Inbound: PolicyRefuse}
		r := startRig(t, cfg)
		a := spooled(t, filepath.Join(cfg.ConfigDir, "file-transfers"), "a.txt", []byte("unwanted"))
		s := listenSock(t, r.socks)
		f := NewUserFrame(s.addr, uuid.NewString(), Envelope{From: s.addr, FromName: "t", FromMode: "prompting", Body: "x"}, []message.Attachment{a})
		dial(t, r.p.SocketPath(), authLine(t, r.p.peerToken), marshal(t, f))
		r.next(t, isType(message.EventDrop))
		if names := entries(t, cfg.UploadsDir); len(names) != 0 {
			t.Fatalf("uploads holds %v", names)
		}
	})
}

func TestUploadsRefuseWhatWouldPassTheQuota(t *testing.T) {
	spool, dir := t.TempDir(), filepath.Join(t.TempDir(), "uploads")
	u := newUploads(dir, 10, time.Hour, clock.NewFakeClock(time.Time{}))
	six := spooled(t, spool, "six", []byte("666666"))
	if _, refusal, err := u.store(six); refusal != "" {
		t.Fatalf("6 of 10 bytes refused: %s %v", refusal, err)
	}
	if _, refusal, _ := u.store(six); refusal != "" {
		t.Fatal("a content already kept was refused: it costs nothing")
	}
	five := spooled(t, spool, "five", []byte("55555"))
	if _, refusal, _ := u.store(five); refusal != message.AttachmentOverQuota {
		t.Fatalf("11 of 10 bytes: refusal %q, want %q", refusal, message.AttachmentOverQuota)
	}
	four := spooled(t, spool, "four", []byte("4444"))
	if _, refusal, err := u.store(four); refusal != "" {
		t.Fatalf("10 of 10 bytes refused: %s %v", refusal, err)
	}
	if names := entries(t, dir); len(names) != 2 {
		t.Fatalf("uploads holds %v, want two contents", names)
	}
}

func TestCollectRemovesOldFilesThenTheOldestPastTheQuota(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFakeClock(time.Time{})
	now := clk.Now()
	write := func(rel string, size int, age time.Duration) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	legacy := write("msg-1/old.bin", 50, 48*time.Hour) // the layout of one directory a message
	oldest := write("a", 40, 3*time.Hour)
	middle := write("b", 40, 2*time.Hour)
	newest := write("c", 40, time.Hour)
	u := newUploads(dir, 100, 24*time.Hour, clk)
	removed, freed := u.collect()
	if removed != 2 || freed != 90 {
		t.Fatalf("removed %d files, %d bytes; want the day-old one and the oldest past the quota (2, 90)", removed, freed)
	}
	for _, p := range []string{legacy, oldest} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s kept", p)
		}
	}
	if _, err := os.Lstat(filepath.Dir(legacy)); !os.IsNotExist(err) {
		t.Error("the emptied message directory was kept")
	}
	for _, p := range []string{middle, newest} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed", p)
		}
	}
	if u.used != 80 {
		t.Fatalf("used = %d after collecting, want 80", u.used)
	}
}

func TestUploadsAreCollectedUntilTheRunEnds(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFakeClock(time.Time{})
	u := newUploads(dir, 1<<20, time.Hour, clk)
	p := filepath.Join(dir, "x")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Five minutes short of the max age: the round after the next
	// interval finds it too old.
	mod := clk.Now().Add(-55 * time.Minute)
	if err := os.Chtimes(p, mod, mod); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); u.run(ctx, slog.New(slog.DiscardHandler)) }()
	waitPending(t, clk)
	if _, err := os.Lstat(p); err != nil {
		t.Fatal("removed before its time")
	}
	clk.Advance(uploadsGCEvery)
	waitPending(t, clk) // re-armed: this round is done
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Fatal("the periodic collection did not run")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the collector did not stop with its context")
	}
}

// waitPending waits until the collector has armed its next timer.
func waitPending(t *testing.T, clk *clock.FakeClock) {
	t.Helper()
	testutil.Eventually(t, "the collector armed its next timer", func() bool { return clk.Pending() == 1 })
}
