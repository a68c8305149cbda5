package fakedaemon

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"testing"
	"time"
)

// Conformance checks a daemon at socketPath against the frames seen on the
// real one (interop/FINDINGS-bg.md). key is its control key; live is the
// short of a live job that takes replies. It replies to that job once,
// and dispatches and kills one job of its own in the live job's cwd.
func Conformance(t *testing.T, socketPath, key, live string) {
	t.Helper()
	do := func(t *testing.T, req any) map[string]any {
		t.Helper()
		a, err := Do(socketPath, req)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	refused := func(t *testing.T, a map[string]any, code string) {
		t.Helper()
		if a["ok"] != false || a["code"] != code {
			t.Fatalf("got %v, want ok false with code %s", a, code)
		}
		if msg, _ := a["error"].(string); msg == "" {
			t.Fatalf("%s answer has no error text: %v", code, a)
		}
	}

	t.Run("ping answers with the protocol version and needs no proto field", func(t *testing.T) {
		a := do(t, map[string]any{"op": "ping"})
		if a["ok"] != true || a["op"] != "ping" || a["proto"] != float64(Proto) || a["version"] == nil {
			t.Fatalf("ping answered %v", a)
		}
	})
	t.Run("a request in another protocol version is refused with EPROTO naming the daemon's", func(t *testing.T) {
		for _, p := range []string{`{"proto":2,"op":"list"}`, `{"proto":0,"op":"list"}`, `{"proto":1.5,"op":"list"}`,
			`{"proto":"1","op":"list"}`, `{"op":"list"}`, `[1]`} {
			lines, err := Exchange(socketPath, []byte(p+"\n"))
			if err != nil || len(lines) != 1 {
				t.Fatalf("%s: %v %v", p, lines, err)
			}
			refused(t, lines[0], "EPROTO")
			if lines[0]["serverProto"] != float64(Proto) || lines[0]["serverVersion"] == nil {
				t.Fatalf("%s: EPROTO without serverProto and serverVersion: %v", p, lines[0])
			}
		}
	})
	t.Run("a line that is not a JSON object is bad json", func(t *testing.T) {
		for _, p := range []string{`not json`, `5`, `null`, `"list"`} {
			lines, err := Exchange(socketPath, []byte(p+"\n"))
			if err != nil || len(lines) != 1 {
				t.Fatalf("%s: %v %v", p, lines, err)
			}
			refused(t, lines[0], "EUNKNOWN")
		}
	})
	t.Run("an unknown op and a malformed short are malformed requests", func(t *testing.T) {
		refused(t, do(t, map[string]any{"proto": Proto, "op": "no-such-op"}), "EUNKNOWN")
		refused(t, do(t, map[string]any{"proto": Proto, "op": "subscribe", "short": "XYZ"}), "EUNKNOWN")
	})
	t.Run("list shows the live job with its session id, cwd and state", func(t *testing.T) {
		if job := findJob(t, socketPath, live); job == nil || job["sessionId"] == "" || job["cwd"] == "" || job["state"] == "" {
			t.Fatalf("live job %s in list: %v", live, job)
		}
	})
	t.Run("has says the live job is alive", func(t *testing.T) {
		a := do(t, map[string]any{"proto": Proto, "op": "has", "short": live})
		if a["ok"] != true || a["alive"] != true || a["present"] != true {
			t.Fatalf("has answered %v", a)
		}
	})
	t.Run("a job the daemon does not have is ENOJOB to subscribe, reply and kill", func(t *testing.T) {
		for _, op := range []string{"subscribe", "reply", "kill"} {
			refused(t, do(t, map[string]any{"proto": Proto, "op": op, "short": "00000000", "text": "x", "auth": key}), "ENOJOB")
		}
	})
	t.Run("reply without the control key or with a wrong one is EAUTH", func(t *testing.T) {
		missing := do(t, map[string]any{"proto": Proto, "op": "reply", "short": live, "text": "x"})
		wrong := do(t, map[string]any{"proto": Proto, "op": "reply", "short": live, "text": "x", "auth": "0123456789abcdef0123456789abcdef"})
		refused(t, missing, "EAUTH")
		refused(t, wrong, "EAUTH")
		if missing["error"] == wrong["error"] {
			t.Fatalf("a missing key and a wrong key read the same: %v", missing["error"])
		}
	})
	t.Run("subscribe starts with a snapshot of the job and its recent output", func(t *testing.T) {
		sub, err := Subscribe(socketPath, live, 5)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		f, err := sub.Next()
		if err != nil {
			t.Fatal(err)
		}
		rec, _ := f["record"].(map[string]any)
		if _, isList := f["streamTail"].([]any); f["type"] != "snapshot" || rec["short"] != live || !isList {
			t.Fatalf("first frame %v", f)
		}
	})
	t.Run("reply with the control key is accepted", func(t *testing.T) {
		a := do(t, map[string]any{"proto": Proto, "op": "reply", "short": live, "text": "conformance reply", "auth": key})
		if a["ok"] != true || a["op"] != "reply" {
			t.Fatalf("reply answered %v", a)
		}
	})
	t.Run("only the first line on a connection is answered", func(t *testing.T) {
		lines, err := Exchange(socketPath, []byte(`{"op":"ping"}`+"\n"+`{"proto":1,"op":"list"}`+"\n"))
		if err != nil || len(lines) != 1 || lines[0]["op"] != "ping" {
			t.Fatalf("got %v %v", lines, err)
		}
	})
	t.Run("a request line over 1 MiB is ETOOLARGE", func(t *testing.T) {
		lines, err := Exchange(socketPath, bytes.Repeat([]byte("x"), MaxRequest+16))
		if err != nil || len(lines) != 1 {
			t.Fatalf("got %v %v", lines, err)
		}
		refused(t, lines[0], "ETOOLARGE")
	})
	t.Run("dispatch needs the key; a dispatched job is listed, and kill settles it for its subscribers and removes it", func(t *testing.T) {
		job := findJob(t, socketPath, live)
		cwd, _ := job["cwd"].(string)
		session := newUUID(t)
		short := session[:8]
		d := map[string]any{"proto": Proto, "short": short, "nonce": short, "sessionId": session, "createdAt": time.Now().UnixMilli(),
			"source": "shell", "cwd": cwd, "launch": map[string]any{"mode": "prompt", "args": []string{"--session-id", session, "conformance dispatch"}}, "env": map[string]any{}}
		req := map[string]any{"proto": Proto, "op": "dispatch", "d": d, "timeoutMs": 5000}
		refused(t, do(t, req), "EAUTH")
		if findJob(t, socketPath, short) != nil {
			t.Fatal("a dispatch refused for its key started a job")
		}
		req["auth"] = key
		a := do(t, req)
		if a["ok"] != true || a["op"] != "dispatch" || a["short"] != short {
			t.Fatalf("dispatch answered %v", a)
		}
		if findJob(t, socketPath, short) == nil {
			t.Fatalf("dispatched job %s not in list", short)
		}
		sub, err := Subscribe(socketPath, short, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		if f, err := sub.Next(); err != nil || f["type"] != "snapshot" {
			t.Fatalf("first frame %v %v", f, err)
		}
		if a := do(t, map[string]any{"proto": Proto, "op": "kill", "short": short}); a["ok"] != true || a["op"] != "kill" {
			t.Fatalf("kill answered %v", a)
		}
		sawKilledPatch := false
		for {
			f, err := sub.Next()
			if err != nil || f == nil {
				t.Fatalf("stream ended before settled (%v); killed patch seen: %v", err, sawKilledPatch)
			}
			if p, _ := f["patch"].(map[string]any); f["type"] == "state" && p["outcome"] == "killed" {
				sawKilledPatch = true
			}
			if f["type"] == "settled" {
				if f["outcome"] != "killed" || !sawKilledPatch {
					t.Fatalf("settled %v after killed patch %v", f, sawKilledPatch)
				}
				break
			}
		}
		if f, err := sub.Next(); f != nil || err != nil {
			t.Fatalf("after settled the daemon sent %v %v, want the end of the stream", f, err)
		}
		if findJob(t, socketPath, short) != nil {
			t.Fatal("a killed job is still listed")
		}
	})
}

func findJob(t *testing.T, socketPath, short string) map[string]any {
	t.Helper()
	a, err := Do(socketPath, map[string]any{"proto": Proto, "op": "list"})
	if err != nil {
		t.Fatal(err)
	}
	jobs, isList := a["jobs"].([]any)
	if a["ok"] != true || !isList {
		t.Fatalf("list answered %v", a)
	}
	for _, j := range jobs {
		if m, _ := j.(map[string]any); m["short"] == short {
			return m
		}
	}
	return nil
}

func newUUID(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
