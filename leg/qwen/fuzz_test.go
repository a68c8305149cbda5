package qwen

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// Every parser of bytes from another process is fuzzed against its own
// printer: what parses prints to text that parses back to the same value.

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`{"msgV":1,"type":"auth","token":"abc"}`,
		`{"msgV":1,"msgId":"m-1","type":"user","from":"/s/1.sock","replyToken":"rt","fromName":"n","fromMode":"prompting","toSessionId":"","priority":"now","message":{"role":"user","content":"hi <b>"}}`,
		`{"msgV":0,"msgId":"r","type":"control","action":"delivery_status","status":"dropped","origMsgId":"o","dropReason":"duplicate","droppedMsgIds":["a",1,"b"]}`,
		`{"msgV":1,"msgId":"r","type":"control","action":"delivery_status","status":"held","origMsgId":"o","reason":"r\u2028"}`,
		`{"msgV":-1e400,"type":"auth","token":"t","token":"u"}`,
		` {"MsgV":1} `, `[]`, ``,
		// Our hopChain extension: kept when valid, dropped whole otherwise.
		`{"msgV":1,"msgId":"m-2","type":"user","message":{"role":"user","content":"x"},"hopChain":["0123456789abcdef01234567","abcdefabcdefabcdefabcdef"]}`,
		`{"msgV":1,"msgId":"m-3","type":"user","message":{"role":"user","content":"x"},"hopChain":["0123456789abcdef0123456",7,null]}`,
		`{"msgV":1,"msgId":"m-4","type":"user","message":{"role":"user","content":"x"},"hopChain":"0123456789abcdef01234567"}`,
		`{"msgV":1,"msgId":"m-5","type":"user","message":{"role":"user","content":"x"},"hopChain":[]}`,
	} {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile("testdata/realjs_frames.json"); err == nil {
		var vs []struct{ Line string }
		if json.Unmarshal(b, &vs) == nil {
			for i := 0; i < len(vs); i += 40 {
				f.Add([]byte(vs[i].Line))
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseLine(b)
		if err != nil {
			return
		}
		var fr Frame
		n := 0
		if l.Auth != nil {
			fr, n = *l.Auth, n+1
		}
		if l.User != nil {
			fr, n = *l.User, n+1
		}
		if l.Status != nil {
			fr, n = *l.Status, n+1
		}
		if n != 1 {
			t.Fatalf("%d parts set", n)
		}
		out, err := fr.Marshal()
		if err != nil {
			t.Fatalf("a parsed line does not print: %v", err)
		}
		back, err := ParseLine(out)
		if err != nil {
			t.Fatalf("printed %s does not parse: %v", out, err)
		}
		if !reflect.DeepEqual(back, l) {
			t.Fatalf("round trip changed %+v into %+v", describeLine(l), describeLine(back))
		}
	})
}

func FuzzParseRecord(f *testing.F) {
	f.Add([]byte(sampleRecord), "41337.json")
	f.Add([]byte(`{"schemaVersion":0.5,"pid":1e0,"sessionId":"","cwd":"","name":"","startedAt":-1e300,"pidNs":1.5,"kind":"x-1"}`), "1-0a0b0c0d.json")
	f.Add([]byte(`{"schemaVersion":2}`), "0.json")
	f.Fuzz(func(t *testing.T, b []byte, name string) {
		r, err := ParseRecord(b)
		if err != nil {
			return
		}
		Judge(name, r, facts{ns: r.PidNS, boot: "B", alive: map[int]string{r.PID: "B:1"}})
		MayReplace(b, r.PID, facts{})
		out, err := r.encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseRecord(out)
		if err != nil || back != r {
			t.Fatalf("round trip: %+v, %v; want %+v", back, err, r)
		}
		if r.Validate() == nil {
			if m, err := r.Marshal(); err != nil || string(m) != string(out) {
				t.Fatalf("Marshal disagrees with the layout: %v", err)
			}
		}
	})
}

func FuzzParseControllers(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":1,"controllers":[{"id":"c_0a1b2c3d","label":"v\u0000x","tokenHash":"` +
		"abababababababababababababababababababababababababababababababab" + `","createdAt":1.5}]}`))
	f.Add([]byte(`{"schemaVersion":1,"controllers":[1,null,{"id":"c_"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cs, err := ParseControllers(b, true)
		if err != nil {
			return
		}
		out, err := MarshalControllers(cs)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseControllers(out, false)
		if err != nil || !reflect.DeepEqual(back, cs) {
			t.Fatalf("round trip: %+v, %v; want %+v", back, err, cs)
		}
	})
}

func FuzzFileNames(f *testing.F) {
	for _, s := range []string{"41337.json", "1-0a1b2c3d.json", "007.json", "1-0a1b2c3d.sock", "1.json.0123456789ab.tmp", "qwen-socks-0123456789abcdef"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if pid, suffix, ok := ParseRecordFileName(name); ok {
			if got := RecordFileName(pid, suffix); got != name {
				t.Fatalf("%q parsed to %d %q, which prints %q", name, pid, suffix, got)
			}
		}
		if pid, _, ok := ParseSocketFileName(name); ok && pid <= 0 {
			t.Fatalf("%q: pid %d", name, pid)
		}
		if IsNonceDirName(name) && len(name) != len(SocketDirName)+1+nonceHex {
			t.Fatalf("%q is no nonce directory", name)
		}
		if IsTempFileName(name) && !strings.HasSuffix(name, ".tmp") {
			t.Fatalf("%q is no temp file", name)
		}
	})
}
