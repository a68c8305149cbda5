package outbox_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg/outbox"
	"github.com/sessiongateway/gateway/message"
)

// stateDir is a fresh 0700 directory.
func stateDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

func openStore(t *testing.T, dir string, o outbox.Options) *outbox.Store {
	t.Helper()
	s, err := outbox.Open(filepath.Join(dir, outbox.FileName), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func msg(id, to, body string) message.Message {
	return message.Message{ID: id, To: to, Body: body, Mode: message.ModePrompting,
		HopChain: []string{"uds:/tmp/cc-socks/1.sock"}, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func add(t *testing.T, s *outbox.Store, m message.Message) outbox.Entry {
	t.Helper()
	e, err := s.Add(outbox.Entry{Message: m, Leg: message.ProtocolRemote})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func finish(t *testing.T, s *outbox.Store, id string, st message.OutboxState) {
	t.Helper()
	if _, err := s.Update(id, func(e *outbox.Entry) { e.State, e.FinishedAt = st, time.Now() }); err != nil {
		t.Fatal(err)
	}
}

func ids(es []outbox.Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Message.ID+":"+e.State.String())
	}
	return strings.Join(out, " ")
}

func TestStore(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, dir string)
	}{
		{"an added message reads back whole, pending, in acceptance order", func(t *testing.T, dir string) {
			s := openStore(t, dir, outbox.Options{})
			m := msg("m1", "bridge:s1", "hello\nthere")
			m.From, m.FromSession, m.Attachments = "uds:/tmp/cc-socks/9.sock", "sess-9", []message.Attachment{{Path: "/tmp/a", FileName: "a"}}
			add(t, s, m)
			add(t, s, msg("m2", "bridge:s2", "two"))
			got, err := s.Get("m1")
			if err != nil {
				t.Fatal(err)
			}
			if got.State != message.OutboxPending || got.Message.Body != m.Body || got.Message.From != m.From ||
				got.Message.HopChain[0] != m.HopChain[0] || got.Message.Attachments[0].Path != "/tmp/a" || !got.Message.Time.Equal(m.Time) {
				t.Fatalf("read back %+v", got)
			}
			list, _ := s.List(false)
			if ids(list) != "m1:pending m2:pending" || list[0].Seq >= list[1].Seq {
				t.Fatalf("list = %s", ids(list))
			}
		}},
		{"a message id is stored once", func(t *testing.T, dir string) {
			s := openStore(t, dir, outbox.Options{})
			add(t, s, msg("m1", "bridge:s1", "one"))
			if _, err := s.Add(outbox.Entry{Message: msg("m1", "bridge:s1", "again")}); !errors.Is(err, outbox.ErrExists) {
				t.Fatalf("second add: %v, want ErrExists", err)
			}
			if p, _ := s.Len(); p != 1 {
				t.Fatalf("%d pending, want 1", p)
			}
		}},
		{"a message without an id is refused", func(t *testing.T, dir string) {
			s := openStore(t, dir, outbox.Options{})
			if _, err := s.Add(outbox.Entry{Message: msg("", "bridge:s1", "x")}); !errors.Is(err, outbox.ErrNoID) {
				t.Fatalf("add: %v, want ErrNoID", err)
			}
		}},
		{"beyond the cap a message is refused with an error that says what to do", func(t *testing.T, dir string) {
			s := openStore(t, dir, outbox.Options{MaxPending: 2})
			add(t, s, msg("m1", "bridge:s1", "one"))
			add(t, s, msg("m2", "bridge:s1", "two"))
			_, err := s.Add(outbox.Entry{Message: msg("m3", "bridge:s1", "three")})
			var fe *outbox.FullError
			if !errors.Is(err, message.ErrOutboxFull) || !errors.As(err, &fe) || fe.Pending != 2 || fe.Max != 2 {
				t.Fatalf("third add: %v, want a FullError", err)
			}
			if !strings.Contains(err.Error(), "gateway outbox") || s.Err() == nil {
				t.Fatalf("error %q / Err %v", err, s.Err())
			}
			finish(t, s, "m1", message.OutboxAcked)
			if s.Err() != nil {
				t.Fatalf("Err after room was made: %v", s.Err())
			}
			add(t, s, msg("m3", "bridge:s1", "three"))
		}},
		{"a message that would take the pending ones past the byte cap is refused, after a restart too", func(t *testing.T, dir string) {
			o := outbox.Options{MaxPendingBytes: 8 << 10}
			s := openStore(t, dir, o)
			kib := strings.Repeat("x", 1<<10)
			for i := range 6 {
				add(t, s, msg(fmt.Sprintf("m%d", i), "bridge:s1", kib))
			}
			for range 2 { // now, and from what the file holds after a restart
				_, err := s.Add(outbox.Entry{Message: msg("big", "bridge:s1", kib+kib+kib)})
				var fe *outbox.FullError
				if !errors.Is(err, message.ErrOutboxFull) || !errors.As(err, &fe) || fe.Pending != 6 || fe.MaxBytes != 8<<10 || fe.Bytes < 6<<10 {
					t.Fatalf("add: %v, want a FullError for the bytes", err)
				}
				if !strings.Contains(err.Error(), "KiB") || !strings.Contains(err.Error(), "gateway outbox") {
					t.Fatalf("error %q does not say why", err)
				}
				s.Close()
				s = openStore(t, dir, o)
			}
			add(t, s, msg("small", "bridge:s1", "fits"))
			finish(t, s, "m0", message.OutboxAcked)
			finish(t, s, "m1", message.OutboxFailed)
			finish(t, s, "m2", message.OutboxAcked)
			add(t, s, msg("big", "bridge:s1", kib+kib+kib)) // room was made
		}},
		{"finished entries beyond the kept number are pruned, oldest first", func(t *testing.T, dir string) {
			s := openStore(t, dir, outbox.Options{KeepFinished: 2})
			for _, id := range []string{"m1", "m2", "m3", "m4"} {
				add(t, s, msg(id, "bridge:s1", id))
			}
			finish(t, s, "m1", message.OutboxAcked)
			finish(t, s, "m2", message.OutboxFailed)
			finish(t, s, "m3", message.OutboxAcked)
			all, _ := s.List(true)
			if ids(all) != "m2:failed m3:acked m4:pending" {
				t.Fatalf("all = %s", ids(all))
			}
			if _, err := s.Get("m1"); !errors.Is(err, outbox.ErrNotFound) {
				t.Fatalf("pruned m1: %v", err)
			}
			if p, f := s.Len(); p != 1 || f != 2 {
				t.Fatalf("len = %d pending, %d finished", p, f)
			}
		}},
		{"finished entries beyond the kept bytes are pruned, oldest first, counted again after a restart", func(t *testing.T, dir string) {
			kib := strings.Repeat("k", 1<<10)
			o := outbox.Options{KeepFinishedBytes: 3 << 10}
			s := openStore(t, dir, o)
			for _, id := range []string{"m1", "m2", "m3", "m4", "m5"} {
				add(t, s, msg(id, "bridge:s1", kib))
			}
			for _, id := range []string{"m1", "m2", "m3"} {
				finish(t, s, id, message.OutboxAcked)
			}
			if all, _ := s.List(true); ids(all) != "m2:acked m3:acked m4:pending m5:pending" {
				t.Fatalf("all = %s, want two finished entries of over a KiB each within 3 KiB", ids(all))
			}
			s.Close()
			s = openStore(t, dir, o)
			finish(t, s, "m4", message.OutboxFailed)
			if all, _ := s.List(true); ids(all) != "m3:acked m4:failed m5:pending" {
				t.Fatalf("after a restart all = %s", ids(all))
			}
			s.Close()
			s = openStore(t, dir, outbox.Options{KeepFinishedBytes: 1})
			finish(t, s, "m5", message.OutboxAcked)
			if all, _ := s.List(true); ids(all) != "m5:acked" {
				t.Fatalf("with room for none, all = %s; the newest is kept", ids(all))
			}
		}},
		{"a finished entry is not changed again", func(t *testing.T, dir string) {
			s := openStore(t, dir, outbox.Options{})
			add(t, s, msg("m1", "bridge:s1", "one"))
			finish(t, s, "m1", message.OutboxAcked)
			e, err := s.Update("m1", func(e *outbox.Entry) { e.State, e.Attempts = message.OutboxPending, 99 })
			if err != nil || e.State != message.OutboxAcked || e.Attempts != 0 {
				t.Fatalf("update of a finished entry: %+v %v", e, err)
			}
		}},
		{"an update keeps the message and acceptance as stored", func(t *testing.T, dir string) {
			s := openStore(t, dir, outbox.Options{})
			want := add(t, s, msg("m1", "bridge:s1", "one"))
			e, err := s.Update("m1", func(e *outbox.Entry) { e.Message.Body, e.Seq, e.AcceptedAt, e.Attempts = "changed", 77, time.Time{}, 1 })
			if err != nil || e.Message.Body != "one" || e.Seq != want.Seq || !e.AcceptedAt.Equal(want.AcceptedAt) || e.Attempts != 1 {
				t.Fatalf("update: %+v %v", e, err)
			}
			if _, err := s.Update("nope", func(*outbox.Entry) {}); !errors.Is(err, outbox.ErrNotFound) {
				t.Fatalf("update of an unknown id: %v", err)
			}
		}},
		{"a reopened store has what was written, and numbers on", func(t *testing.T, dir string) {
			s, err := outbox.Open(filepath.Join(dir, outbox.FileName), outbox.Options{})
			if err != nil {
				t.Fatal(err)
			}
			first := add(t, s, msg("m1", "bridge:s1", "one"))
			add(t, s, msg("m2", "bridge:s1", "two"))
			finish(t, s, "m2", message.OutboxFailed)
			s.Close()
			s = openStore(t, dir, outbox.Options{})
			if p, f := s.Len(); p != 1 || f != 1 {
				t.Fatalf("reopened with %d pending, %d finished", p, f)
			}
			if e := add(t, s, msg("m3", "bridge:s1", "three")); e.Seq <= first.Seq+1 {
				t.Fatalf("seq %d after %d", e.Seq, first.Seq)
			}
			all, _ := s.List(true)
			if ids(all) != "m1:pending m2:failed m3:pending" {
				t.Fatalf("all = %s", ids(all))
			}
		}},
		{"the file is 0600, and a looser one is tightened", func(t *testing.T, dir string) {
			path := filepath.Join(dir, outbox.FileName)
			s, err := outbox.Open(path, outbox.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
				t.Fatalf("mode %v", fi.Mode().Perm())
			}
			if err := os.Chmod(path, 0o644); err != nil {
				t.Fatal(err)
			}
			openStore(t, dir, outbox.Options{})
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
				t.Fatalf("mode %v after reopening a 0644 file", fi.Mode().Perm())
			}
		}},
		{"an entry the store cannot read is skipped, not delivered", func(t *testing.T, dir string) {
			path := filepath.Join(dir, outbox.FileName)
			s, err := outbox.Open(path, outbox.Options{})
			if err != nil {
				t.Fatal(err)
			}
			add(t, s, msg("m1", "bridge:s1", "one"))
			s.Close()
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket([]byte("entries"))
				if err := b.Put([]byte("bad"), []byte("{not json")); err != nil {
					return err
				}
				return b.Put([]byte("future"), []byte(`{"v":99,"message":{"id":"future"},"state":"pending"}`))
			})
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			s = openStore(t, dir, outbox.Options{})
			list, err := s.List(true)
			if err != nil || ids(list) != "m1:pending" {
				t.Fatalf("list = %s, %v", ids(list), err)
			}
			if p, _ := s.Len(); p != 1 {
				t.Fatalf("%d pending", p)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, stateDir(t)) })
	}
}

func TestOpenRefusesUnsafePaths(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the path to open
		want  error
	}{
		{"a symlink to a real database is refused", func(t *testing.T, dir string) string {
			real := filepath.Join(stateDir(t), "real.db")
			s, err := outbox.Open(real, outbox.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			path := filepath.Join(dir, outbox.FileName)
			if err := os.Symlink(real, path); err != nil {
				t.Fatal(err)
			}
			return path
		}, safefile.ErrSymlink},
		{"a dangling symlink is refused, not created through", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, outbox.FileName)
			if err := os.Symlink(filepath.Join(dir, "elsewhere.db"), path); err != nil {
				t.Fatal(err)
			}
			return path
		}, safefile.ErrSymlink},
		{"a directory in its place is refused", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, outbox.FileName)
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
			return path
		}, safefile.ErrNotRegular},
		{"a state directory others can read is refused", func(t *testing.T, dir string) string {
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dir, outbox.FileName)
		}, safefile.ErrLooseMode},
		{"a symlinked state directory is refused", func(t *testing.T, dir string) string {
			link := filepath.Join(t.TempDir(), "state-link")
			if err := os.Symlink(dir, link); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(link, outbox.FileName)
		}, safefile.ErrSymlink},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := stateDir(t)
			path := tt.setup(t, dir)
			s, err := outbox.Open(path, outbox.Options{})
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "elsewhere.db")); err == nil {
				t.Fatal("a file was created through the symlink")
			}
		})
	}
}

func TestASecondOpenOfTheSameFileFailsClearly(t *testing.T) {
	dir := stateDir(t)
	openStore(t, dir, outbox.Options{})
	_, err := outbox.Open(filepath.Join(dir, outbox.FileName), outbox.Options{LockTimeout: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("second open: %v", err)
	}
}

func TestStateAndFailureWireSpellings(t *testing.T) {
	for _, s := range []message.OutboxState{message.OutboxPending, message.OutboxAcked, message.OutboxFailed} {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got message.OutboxState
		if err := got.UnmarshalText(b); err != nil || got != s {
			t.Errorf("%v does not round-trip: %v %v", s, got, err)
		}
	}
	if _, err := message.ParseOutboxState("sent"); err == nil {
		t.Error("state sent parsed")
	}
	if _, err := message.OutboxState(0).MarshalText(); err == nil {
		t.Error("the zero state was written")
	}
	for _, r := range []message.OutboxFailure{message.OutboxRefused, message.OutboxExpired, message.OutboxGone} {
		b, err := r.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got message.OutboxFailure
		if err := got.UnmarshalText(b); err != nil || got != r {
			t.Errorf("%v does not round-trip: %v %v", r, got, err)
		}
	}
}
