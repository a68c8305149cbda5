package fakedaemon

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestTheStandInPassesTheConformanceChecks(t *testing.T) {
	d := Start(t, Options{})
	job := d.AddJob(Record{Cwd: t.TempDir(), Intent: "say hi"})
	Conformance(t, d.SocketPath(), d.Key(), job.Short)
	if r := d.Replies(); len(r) != 1 || r[0].Text != "conformance reply" {
		t.Fatalf("replies recorded: %v", r)
	}
	if len(d.Dispatches()) != 1 {
		t.Fatalf("dispatches recorded: %d, want 1", len(d.Dispatches()))
	}
}

func TestSocketPathIsTheRealDaemons(t *testing.T) {
	uid := "/tmp/cc-daemon-" + strconv.Itoa(os.Getuid()) + "/"
	for _, c := range []struct{ dir, want string }{
		// Seen: the daemon of HOME=/tmp/bgh/home bound this path.
		{"/tmp/bgh/home/.claude", uid + "6e118514/control.sock"},
		{"/tmp/bgh/home/.claude/", uid + "6e118514/control.sock"},
		{"/tmp/bgh/home/x/../.claude", uid + "6e118514/control.sock"},
	} {
		if got, err := SocketPath(c.dir); err != nil || got != c.want {
			t.Errorf("SocketPath(%q) = %q, %v; want %q", c.dir, got, err, c.want)
		}
	}
}

func TestAStandInForAConfigDirSitsWhereTheRealDaemonWouldAndWritesItsKey(t *testing.T) {
	cfg := t.TempDir()
	want, err := SocketPath(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(want)) })
	d := Start(t, Options{ConfigDir: cfg})
	if d.SocketPath() != want {
		t.Fatalf("listens on %s, want %s", d.SocketPath(), want)
	}
	key := filepath.Join(cfg, "daemon", "control.key")
	b, err := os.ReadFile(key)
	if err != nil || string(b) != d.Key() || len(b) != 32 {
		t.Fatalf("key file %q (%v), want the 32-hex key %q", b, err, d.Key())
	}
	if fi, _ := os.Stat(key); fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Dir(want)); fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket dir mode %v, want 0700", fi.Mode().Perm())
	}
}

func TestASubscriberSeesStreamAndStateFramesThenSettledThenTheEnd(t *testing.T) {
	d := Start(t, Options{})
	job := d.AddJob(Record{})
	if err := d.Stream(job.Short, "before"); err != nil {
		t.Fatal(err)
	}
	sub, err := Subscribe(d.SocketPath(), job.Short, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	snap, err := sub.Next()
	if err != nil || snap["type"] != "snapshot" || len(snap["streamTail"].([]any)) != 1 {
		t.Fatalf("snapshot %v %v", snap, err)
	}
	must(t, d.Stream(job.Short, "hello"))
	must(t, d.Patch(job.Short, map[string]any{"tempo": "active"}))
	must(t, d.Settle(job.Short, "done"))
	var got []string
	for {
		f, err := sub.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f == nil {
			break
		}
		got = append(got, f["type"].(string))
	}
	if want := "stream state state settled"; strings.Join(got, " ") != want {
		t.Fatalf("frames %v, want %s", got, want)
	}
	jobs := d.Jobs()
	if len(jobs) != 1 || jobs[0].Outcome != "done" || jobs[0].Tempo != "idle" {
		t.Fatalf("a job settled done is listed as %+v", jobs)
	}
	lines, err := Exchange(d.SocketPath(), []byte(`{"proto":1,"op":"subscribe","short":"`+job.Short+`"}`+"\n"))
	if err != nil || len(lines) != 2 || lines[0]["type"] != "snapshot" || lines[1]["outcome"] != "done" {
		t.Fatalf("subscribing to a settled job: %v %v", lines, err)
	}
}

func TestASubscriberThatDoesNotReadIsCutOffAndNeverBlocksTheDaemon(t *testing.T) {
	d := Start(t, Options{})
	job := d.AddJob(Record{})
	sub, err := Subscribe(d.SocketPath(), job.Short, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	const sent = 600
	line := strings.Repeat("x", 64<<10)
	for i := 0; i < sent; i++ {
		must(t, d.Stream(job.Short, line))
	}
	n := 0
	for {
		f, err := sub.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f == nil {
			break
		}
		n++
	}
	if n >= sent {
		t.Fatalf("a subscriber that did not read got all %d frames", n)
	}
}

func TestShutdownSettlesEveryJobAndStopsTheDaemon(t *testing.T) {
	d := Start(t, Options{})
	d.AddJob(Record{})
	d.AddJob(Record{})
	a, err := Do(d.SocketPath(), map[string]any{"op": "shutdown"})
	if err != nil || a["ok"] != true || a["reaped"] != float64(2) {
		t.Fatalf("shutdown answered %v %v", a, err)
	}
	d.Close() // waits for the shutdown to finish
	if _, err := Do(d.SocketPath(), map[string]any{"op": "ping"}); err == nil {
		t.Fatal("the daemon still answers after shutdown")
	}
	if len(d.Jobs()) != 0 {
		t.Fatalf("jobs left: %v", d.Jobs())
	}
}

func TestAPatchThatDoesNotFitARecordIsAnError(t *testing.T) {
	d := Start(t, Options{})
	job := d.AddJob(Record{})
	if err := d.Patch(job.Short, map[string]any{"pid": "not a number"}); err == nil {
		t.Fatal("a pid patched to a string was accepted")
	}
	if err := d.Stream("00000000", "x"); err != ErrNoJob {
		t.Fatalf("streaming to no job: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestAStandInOfAnotherVersionSaysSoAndRefusesVersionOne(t *testing.T) {
	d := Start(t, Options{Proto: 2})
	d.AddJob(Record{})
	if a, err := Do(d.SocketPath(), map[string]any{"op": "ping"}); err != nil || a["proto"] != float64(2) {
		t.Fatalf("ping answered %v %v", a, err)
	}
	a, err := Do(d.SocketPath(), map[string]any{"proto": Proto, "op": "list"})
	if err != nil || a["code"] != "EPROTO" || a["serverProto"] != float64(2) {
		t.Fatalf("a version-1 list answered %v %v", a, err)
	}
	if a, err := Do(d.SocketPath(), map[string]any{"proto": 2, "op": "list"}); err != nil || a["ok"] != true {
		t.Fatalf("a version-2 list answered %v %v", a, err)
	}
}
