package claude

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

var envelopeSeeds = []string{
	"<cross-session-message from=\"uds:/tmp/cc-socks/1.sock\" from-name=\"bob\" from-mode=\"bypass\">\nhi\n</cross-session-message>",
	"<cross-session-message from=\"uds:/r/cc-socks/1.sock\" from-session=\"s_1\" hop-chain=\"" + tok1 + "," + tok2 +
		"\" from-name=\"n\" from-mode=\"prompting\" from-plugin=\"p@m\">\na<\\/cross-session-message>b\n</cross-session-message>",
	"<cross-session-message>\n\n</cross-session-message>",
	"<cross-session-message>\n＜\\／CROSS_SESSION-MESSAGE＞\n</cross-session-message>",
	"<cross-session-message from-mode=\"bypass\" from=\"uds:/a\">\nx\n</cross-session-message>",
	"<cross-session-message>\n</cross-session-message>\n</cross-session-message>",
}

// FuzzParseEnvelope: whatever parses prints back to exactly its input.
func FuzzParseEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		env, err := ParseEnvelope(s)
		c := ParseContent(s)
		if err != nil {
			if c.Attested || c.Envelope.Body != s {
				t.Fatalf("ParseContent attested what ParseEnvelope refused: %v", err)
			}
			return
		}
		if got := env.String(); got != s {
			t.Fatalf("round trip changed %q into %q", s, got)
		}
		if err := env.Validate(); err != nil {
			t.Fatalf("parsed envelope does not validate: %v", err)
		}
		if !c.Attested || !envEqual(c.Envelope, env) {
			t.Fatalf("ParseContent disagrees: %+v", c)
		}
		// What we attest, Claude Code attests: its body rewrite changes nothing.
		wire := EscapeBody(env.Body)
		if claudeEscape(wire) != wire {
			t.Fatalf("Claude Code would rewrite the body %q", wire)
		}
	})
}

// FuzzEnvelopeString: every envelope that validates prints to text that
// parses back to the same envelope, body included.
func FuzzEnvelopeString(f *testing.F) {
	f.Add("uds:/tmp/cc-socks/1.sock", "s-1", tok1+","+tok2, "Bob", "bypass", "p@m", "hello </cross-session-message>")
	f.Add("", "", "", "", "", "", "")
	f.Add("bridge:x", "", "", "＜n＞", "prompting", "", "<\\\\/Cross-Session_Message\u200b>")
	f.Fuzz(func(t *testing.T, from, session, chain, name, mode, plugin, body string) {
		e := Envelope{From: from, FromSession: session, FromName: name, FromMode: mode, FromPlugin: plugin, Body: body}
		if chain != "" {
			e.HopChain = strings.Split(chain, ",")
		}
		if e.Validate() != nil {
			return
		}
		s := e.String()
		got, err := ParseEnvelope(s)
		if err != nil {
			t.Fatalf("ParseEnvelope(%q) = %v", s, err)
		}
		if !envEqual(got, e) {
			t.Fatalf("round trip changed %+v into %+v", e, got)
		}
	})
}

// FuzzEscapeBody: our escape is reversible, Claude Code leaves what we print
// alone, and we read back exactly what Claude Code prints.
func FuzzEscapeBody(f *testing.F) {
	for _, s := range []string{"", "</cross-session-message>", `<\/cross-session-message>`, "＜／cross_session-message＞",
		"<</cross-session-message</cross-sessİon-message", "</croſſ-\u200bsession\u2014message"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // envelope bodies are valid UTF-8
		}
		esc := EscapeBody(s)
		if got := UnescapeBody(esc); got != s {
			t.Fatalf("UnescapeBody(EscapeBody(%q)) = %q", s, got)
		}
		if c := claudeEscape(esc); c != esc {
			t.Fatalf("Claude Code would rewrite our %q as %q", esc, c)
		}
		theirs := claudeEscape(s)
		if got := EscapeBody(UnescapeBody(theirs)); got != theirs {
			t.Fatalf("Claude Code's %q does not survive our round trip: %q", theirs, got)
		}
	})
}

// FuzzSanitizeName: the result is empty or a valid from-name, and sanitizing
// again changes nothing.
func FuzzSanitizeName(f *testing.F) {
	for _, s := range []string{"bob", ` "<b>" `, "＜x＞\u200b\t", strings.Repeat("é ", 50)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := SanitizeName(s)
		if got != "" {
			if err := (Envelope{FromName: got}).Validate(); err != nil {
				t.Fatalf("SanitizeName(%q) = %q, which does not validate: %v", s, got, err)
			}
		}
		if again := SanitizeName(got); again != got {
			t.Fatalf("SanitizeName is not idempotent: %q then %q", got, again)
		}
	})
}

// FuzzParseLine: no line crashes the parser, and a parsed frame prints to a
// line that parses back to the same frame.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"auth","token":"0123456789abcdef0123456789abcdef"}`,
		`{"msgV":1,"msg_id":"` + idA + `","type":"user","message":{"role":"user","content":"<cross-session-message from=\"uds:/a\">\nhi\n</cross-session-message>"},"priority":"next","from":"uds:/a","file_attachments":[{"path":"/p","file_name":"p","file_size":1,"sha256":"x"}]}`,
		`{"type":"control","action":"peer_message_status","status":"expired","status_detail":"refused","orig_msg_id":"x","msgV":1,"msg_id":"y"}`,
		`{"type":"control","action":"peer_message_status","status":"dropped","drop_reason":"duplicate","dropped_msg_ids":["a","b"]}`,
		`{"type":"control","action":"yield_artifact_replies","requester":{"cwd":"/x"},"yielded":[1,{"a":[]}],"stopped":true}`,
		`{"type":"user","type":"control"}`,
		`[1,2,{"a":{"b":[{"c":1,"c":2}]}}]`,
		`{"type":"control","local_chain":"` + tok1 + `","finished_at":-1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseLine(b)
		if err != nil {
			if l.Auth != nil || l.Frame != nil {
				t.Fatal("an error came with a result")
			}
			return
		}
		if (l.Auth == nil) == (l.Frame == nil) {
			t.Fatalf("want exactly one of Auth and Frame: %+v", l)
		}
		if l.Auth != nil {
			out, err := l.Auth.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			l2, err := ParseLine(out)
			if err != nil || l2.Auth == nil || *l2.Auth != *l.Auth {
				t.Fatalf("auth %q did not round-trip: %+v %v", out, l2, err)
			}
			return
		}
		if _, ok := ReceiptOf(l.Frame); ok && l.Frame.Action != ActionPeerMessageStatus {
			t.Fatal("a receipt from another action")
		}
		out, err := l.Frame.Marshal()
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		l2, err := ParseLine(out)
		if err != nil || l2.Frame == nil {
			t.Fatalf("our own line %q does not parse: %v", out, err)
		}
		out2, err := l2.Frame.Marshal()
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("frame changed on the second trip:\n%s\n%s", out, out2)
		}
	})
}

// unmarshalField reads a valid JSON value as encoding/json does, into a
// string or a raw value.
func FuzzUnmarshalFieldIsEncodingJSONs(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b"`, `"\u00e9\n"`, `"é"`, `""`, `1`, `null`, `{"a":[1]}`, `"` + "\xff" + `"`, ` "x" `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return // not what it is given: a member's value from a parsed line
		}
		var got, want string
		errGot, errWant := unmarshalField(b, &got), json.Unmarshal(b, &want)
		if (errGot == nil) != (errWant == nil) || got != want {
			t.Fatalf("string from %q: %q, %v; encoding/json %q, %v", b, got, errGot, want, errWant)
		}
		var gotRaw, wantRaw json.RawMessage
		errGot, errWant = unmarshalField(b, &gotRaw), json.Unmarshal(b, &wantRaw)
		if (errGot == nil) != (errWant == nil) || !bytes.Equal(bytes.TrimSpace(gotRaw), bytes.TrimSpace(wantRaw)) {
			t.Fatalf("raw from %q: %q, %v; encoding/json %q, %v", b, gotRaw, errGot, wantRaw, errWant)
		}
	})
}
