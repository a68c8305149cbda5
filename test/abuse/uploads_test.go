package abuse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// claudeAddress is the gateway's own uds: address, from its registry entry.
func claudeAddress(t *testing.T, g *gatewaytest.Gateway) string {
	t.Helper()
	ents, _ := filepath.Glob(filepath.Join(g.ConfigDir, "sessions", "*.json"))
	for _, f := range ents {
		b, _ := os.ReadFile(f)
		if e, err := claude.ParseEntry(b); err == nil && e.PID == g.PID {
			return addressing.UDS(e.MessagingSocketPath)
		}
	}
	t.Fatal("the gateway's registry entry is missing")
	return ""
}

// spoolFile writes size bytes of seed into the gateway's spool, as a
// sender staging an attachment would, and returns its descriptor.
func spoolFile(t *testing.T, w *gatewaytest.World, name string, size int, seed byte) message.Attachment {
	t.Helper()
	spool := filepath.Join(w.ConfigDir, "file-transfers")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, size)
	for i := range data {
		data[i] = seed + byte(i%251)
	}
	p := filepath.Join(spool, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return message.Attachment{Path: p, FileName: name, FileSize: int64(size), SHA256: hex.EncodeToString(sum[:])}
}

// attachFrame is a user frame from the fake carrying descriptors.
func attachFrame(from, body string, atts []message.Attachment) claude.Frame {
	env := claude.Envelope{From: from, FromName: "sender", FromMode: "prompting", Body: body}
	return claude.NewUserFrame(from, uuid.NewString(), env, atts)
}

func waitMessage(t *testing.T, wt *gatewaytest.Watcher, id string) *message.Message {
	t.Helper()
	ev := wt.Wait(t, 20*time.Second, func(ev message.Event) bool {
		return ev.Type == message.EventMessage && ev.Message.ID == id
	})
	return ev.Message
}

func repeat(a message.Attachment, n int) []message.Attachment {
	out := make([]message.Attachment, n)
	for i := range out {
		out[i] = a
		out[i].FileName = fmt.Sprintf("copy-%d.bin", i)
	}
	return out
}

// TestOneSpoolFileNamedSixteenTimesIsStoredOnce: an authenticated peer
// sends K messages, each with 16 descriptors to one 4 MiB spool file.
// uploads/ keeps that content once; before de-duplication each descriptor
// was a copy (16 x 4 MiB a message).
func TestOneSpoolFileNamedSixteenTimesIsStoredOnce(t *testing.T) {
	const (
		k    = 4
		size = 4 << 20
	)
	w := gatewaytest.NewWorld(t)
	g := gatewaytest.Start(t, w, "gateway", "--legs", "claude")
	wt := g.WatchCLI(t)
	fk := fakeclaude.Start(t, fakeclaude.Config{Name: "sender", ConfigDir: w.ConfigDir, RuntimeDir: w.Runtime})
	gw := claudeAddress(t, g)
	a := spoolFile(t, w, "big.bin", size, 1)
	uploads := filepath.Join(w.StateDir, "uploads")
	before := DirBytes(t, uploads)
	for i := range k {
		f := attachFrame(fk.Address(), fmt.Sprintf("sixteen names %d", i), repeat(a, claude.MaxFilesPerMessage))
		if err := fk.SendFrame(context.Background(), gw, f); err != nil {
			t.Fatal(err)
		}
		m := waitMessage(t, wt, f.MsgID)
		if len(m.Attachments) != claude.MaxFilesPerMessage {
			t.Fatalf("message %d carries %d attachments, want %d", i, len(m.Attachments), claude.MaxFilesPerMessage)
		}
		for _, got := range m.Attachments {
			if got.Refused != "" || !strings.HasPrefix(got.Path, uploads) {
				t.Fatalf("attachment %+v: want it kept in %s", got, uploads)
			}
		}
	}
	after := DirBytes(t, uploads)
	t.Logf("uploads/ after %d messages of %d descriptors to one %s file: %s (before: %s)",
		k, claude.MaxFilesPerMessage, MiB(size), MiB(after), MiB(before))
	if after-before > size {
		t.Fatalf("uploads/ grew by %s, want at most one copy (%s)", MiB(after-before), MiB(size))
	}
}

// TestUploadsStayUnderTheirQuota: distinct files past --uploads-quota are
// refused with a typed reason, and their messages still delivered.
func TestUploadsStayUnderTheirQuota(t *testing.T) {
	const (
		k     = 4
		size  = 4 << 20
		quota = 10 << 20
	)
	w := gatewaytest.NewWorld(t)
	g := gatewaytest.Start(t, w, "gateway", "--legs", "claude", "--uploads-quota", "10MiB")
	wt := g.WatchCLI(t)
	fk := fakeclaude.Start(t, fakeclaude.Config{Name: "sender", ConfigDir: w.ConfigDir, RuntimeDir: w.Runtime})
	gw := claudeAddress(t, g)
	uploads := filepath.Join(w.StateDir, "uploads")
	refused := 0
	for i := range k {
		a := spoolFile(t, w, fmt.Sprintf("f%d.bin", i), size, byte(i))
		f := attachFrame(fk.Address(), fmt.Sprintf("distinct %d", i), []message.Attachment{a})
		if err := fk.SendFrame(context.Background(), gw, f); err != nil {
			t.Fatal(err)
		}
		m := waitMessage(t, wt, f.MsgID)
		if len(m.Attachments) != 1 {
			t.Fatalf("message %d carries %+v", i, m.Attachments)
		}
		if r := m.Attachments[0].Refused; r != "" {
			if r != message.AttachmentOverQuota {
				t.Fatalf("attachment refused as %q, want %q", r, message.AttachmentOverQuota)
			}
			refused++
		}
	}
	got := DirBytes(t, uploads)
	t.Logf("uploads/ after %d distinct %s files under a %s quota: %s, %d refused", k, MiB(size), MiB(quota), MiB(got), refused)
	if got > quota {
		t.Fatalf("uploads/ holds %s, over the %s quota", MiB(got), MiB(quota))
	}
	if refused != 2 {
		t.Fatalf("%d attachments refused, want the 2 past the quota", refused)
	}
}

// TestUnauthenticatedAttachmentsAreNotCopied: a sender without the token
// gets its message delivered and its attachments refused, unread.
func TestUnauthenticatedAttachmentsAreNotCopied(t *testing.T) {
	w := gatewaytest.NewWorld(t)
	g := gatewaytest.Start(t, w, "gateway", "--legs", "claude")
	wt := g.WatchCLI(t)
	a := spoolFile(t, w, "big.bin", 4<<20, 7)
	f := attachFrame("uds:/nowhere.sock", "no token", repeat(a, claude.MaxFilesPerMessage))
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := uds.DialWrite(context.Background(), strings.TrimPrefix(claudeAddress(t, g), "uds:"), append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	m := waitMessage(t, wt, f.MsgID)
	got := DirBytes(t, filepath.Join(w.StateDir, "uploads"))
	t.Logf("uploads/ after one unauthenticated message of %d descriptors: %s", claude.MaxFilesPerMessage, MiB(got))
	if got != 0 {
		t.Fatalf("uploads/ holds %s from an unauthenticated sender", MiB(got))
	}
	for _, at := range m.Attachments {
		if at.Refused != message.AttachmentUnauthenticated || at.Path != "" {
			t.Fatalf("attachment %+v, want refused as %q", at, message.AttachmentUnauthenticated)
		}
	}
}

// TestOldUploadsAreCollectedAtStart: what an earlier run left in uploads/
// past --uploads-max-age is removed when the gateway starts.
func TestOldUploadsAreCollectedAtStart(t *testing.T) {
	w := gatewaytest.NewWorld(t)
	old := filepath.Join(w.StateDir, "uploads", "msg-1")
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(old, "left.bin")
	if err := os.WriteFile(p, make([]byte, 8<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(p, past, past); err != nil {
		t.Fatal(err)
	}
	uploads := filepath.Join(w.StateDir, "uploads")
	before := DirBytes(t, uploads)
	gatewaytest.Start(t, w, "gateway", "--legs", "claude")
	deadline := time.Now().Add(10 * time.Second)
	for DirBytes(t, uploads) != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	after := DirBytes(t, uploads)
	t.Logf("uploads/ before start: %s, after: %s", MiB(before), MiB(after))
	if after != 0 {
		t.Fatalf("uploads/ still holds %s of two-day-old files", MiB(after))
	}
}
