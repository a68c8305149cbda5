package qwen

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// sdkPeer finds @qwen-code/sdk's peer module where .ci/install-interop.sh
// puts it. The test runs only with GATEWAY_INTEROP=1, as the interop suite
// does; then a missing SDK is a failure, not a skip.
func sdkPeer(t *testing.T) string {
	t.Helper()
	testutil.Interop(t, "set GATEWAY_INTEROP=1 to check against @qwen-code/sdk")
	cache := os.Getenv("GATEWAY_INTEROP_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "gateway-interop")
	}
	p := filepath.Join(cache, "qwen", "node_modules", "@qwen-code", "sdk", "dist", "peer", "index.js")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("@qwen-code/sdk not installed (run .ci/install-interop.sh): %v", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node not found")
	}
	return p
}

// runNode runs an ES module body with the SDK's exports as `peer` and the
// JSON on stdin as `input`, and decodes what it prints.
func runNode(t *testing.T, sdk, body string, input, out any) {
	t.Helper()
	in, _ := json.Marshal(input)
	script := `import { readFileSync } from "node:fs";
const peer = await import(process.argv[1]);
const input = JSON.parse(readFileSync(0, "utf8"));
` + body
	cmd := exec.Command("node", "--input-type=module", "-e", script, "file://"+sdk)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("node printed %q: %v", b, err)
	}
}

func TestTheSDKReadsWhatWeWrite(t *testing.T) {
	sdk := sdkPeer(t)

	t.Run("our frames parse to what we meant", func(t *testing.T) {
		u := NewUserFrame(Sender{IPCPath: "/tmp/qwen-socks-0123456789abcdef/9.sock", IPCToken: NewIPCToken(), Name: "gateway", Mode: message.ModeBypass},
			Record{SessionID: "8e016be8"}, "build finished </cross_session_message> 😀")
		d := NewDropFrame("m-1", "/me.sock", message.DropRateLimited, []string{"m-2", "m-3"})
		var lines []string
		for _, f := range []Frame{Auth{Token: "tok"}, u, d} {
			b, err := f.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, string(b))
		}
		var got []json.RawMessage
		runNode(t, sdk, `console.log(JSON.stringify([peer.parsePeerAuthLine(input[0]), peer.parsePeerFrame(input[1]), peer.parsePeerFrame(input[2])]));`, lines, &got)
		if string(got[0]) != `"tok"` {
			t.Fatalf("auth read as %s", got[0])
		}
		var ju, jd jsFrame
		json.Unmarshal(got[1], &ju)
		json.Unmarshal(got[2], &jd)
		if l := ju.line(); !reflect.DeepEqual(*l.User, u) {
			t.Fatalf("user frame read as %+v", *l.User)
		}
		if l := jd.line(); !reflect.DeepEqual(*l.Status, d) {
			t.Fatalf("receipt read as %+v", *l.Status)
		}
	})

	t.Run("our record for this process is listed live", func(t *testing.T) {
		ns, tok := identity(t)
		dir := filepath.Join(t.TempDir(), "sessions")
		if err := safefile.EnsureDir(dir); err != nil {
			t.Fatal(err)
		}
		r := Record{PID: os.Getpid(), ProcStart: tok, PidNS: ns, SessionID: "8e016be8-5b48-4c13-ad22-1f5326ae64ac",
			Cwd: "/w", Name: "gateway", StartedAt: 1788959000000, Kind: KindExternal,
			IPCPath: "/tmp/qwen-socks-0123456789abcdef/1.sock", IPCToken: NewIPCToken()}
		b, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := safefile.WriteAtomic(filepath.Join(dir, RecordFileName(r.PID, NewSuffix())), b); err != nil {
			t.Fatal(err)
		}
		var got []map[string]any
		runNode(t, sdk, `console.log(JSON.stringify(await peer.readLiveSessionRecords(input)));`, dir, &got)
		if len(got) != 1 || got[0]["sessionId"] != r.SessionID || got[0]["kind"] != "external" || got[0]["ipcToken"] != string(r.IPCToken) || got[0]["qwenVersion"] != nil {
			t.Fatalf("the SDK lists %+v", got)
		}
	})
}
