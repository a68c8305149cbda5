package federation

import (
	"bytes"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
)

func TestASignatureCoversEveryFieldItsReaderActsOn(t *testing.T) {
	sg := testSigner(t)
	b, err := sg.envelope(envelope{Kind: kindMessage, From: "a", To: "b", Message: &message.Message{ID: "1", To: "uds:/x.sock", Body: "hi", Time: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	check := func(b []byte) Reason {
		e, r := parse(b, "b")
		if r != 0 {
			return r
		}
		_, r = verify(domainEnvelope, &e, &e.seal)
		return r
	}
	if r := check(b); r != 0 {
		t.Fatalf("as signed: %v", r)
	}
	for name, edit := range map[string][2]string{
		"body":      {`"body":"hi"`, `"body":"ho"`},
		"origin":    {`"from_host":"a"`, `"from_host":"c"`},
		"time":      {`"signed_at":`, `"signed_at":1`},
		"nonce":     {`"nonce":"`, `"nonce":"0`},
		"a field":   {`"body":"hi"`, `"body":"hi","from_name":"root"`},
		"no sig":    {`"sig":"`, `"sig_":"`},
		"dup key":   {`"body":"hi"`, `"body":"hi","body":"ho"`},
		"case":      {`"body":"hi"`, `"body":"hi","Body":"ho"`},
		"unicode":   {`"body":"hi"`, `"body":"h\u0131"`},
		"other key": {`"key":"ed25519:`, `"key":"ed25519:A`},
	} {
		bad := []byte(strings.Replace(string(b), edit[0], edit[1], 1))
		if bytes.Equal(bad, b) {
			t.Fatalf("%s: the edit did not apply", name)
		}
		if r := check(bad); r == 0 {
			t.Errorf("%s: an edited envelope verified", name)
		}
	}
	// A signature over a roster entry is no good for an envelope.
	var r rosterEntry
	if _, err := sg.sign(domainRoster, &r, &r.seal); err != nil {
		t.Fatal(err)
	}
	e, _ := parse(b, "b")
	e.seal = r.seal
	if _, reason := verify(domainEnvelope, &e, &e.seal); reason != ReasonSignature {
		t.Fatal(reason)
	}
}

// FuzzSignedEnvelope: nothing but the envelope signed verifies, and
// reading never panics.
func FuzzSignedEnvelope(f *testing.F) {
	// One key in every fuzzing process, so each signs and checks alike.
	sg := newSigner(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)), clock.Real{})
	orig := envelope{Kind: kindReceipt, From: "a", To: "b", Receipt: &message.Receipt{MsgID: "m1", Status: message.StatusDelivered, Time: time.Unix(1700000000, 0).UTC()}}
	b, err := sg.envelope(orig)
	if err != nil {
		f.Fatal(err)
	}
	// What was signed, but for the nonce and time (each process has its own).
	content := func(e envelope) []byte {
		e.Sig, e.Nonce, e.SignedAt = "", "", 0
		c, _ := canonical(&e)
		return c
	}
	want, _ := parse(b, "b")
	wantC := content(want)
	f.Add(b)
	f.Add(bytes.Replace(b, []byte(`"delivered"`), []byte(`"denied"`), 1))
	f.Add(bytes.Replace(b, []byte(`{"v":1,`), []byte(`{"v":1,"V":1,`), 1))
	f.Fuzz(func(t *testing.T, in []byte) {
		e, r := parse(in, "b")
		if r != 0 {
			return
		}
		if _, r := verify(domainEnvelope, &e, &e.seal); r != 0 {
			return
		}
		if got := content(e); !bytes.Equal(got, wantC) {
			t.Fatalf("%q verified as\n%s\nbut was signed as\n%s", in, got, wantC)
		}
	})
}

func TestAKeptSendIsSignedAgainWhenPublished(t *testing.T) {
	n := testNode(t, "a")
	old := newSigner(n.signer.key, clock.Real{})
	old.now = func() time.Time { return time.Now().Add(-time.Hour) }
	kept, err := old.envelope(envelope{Kind: kindMessage, From: "a", To: "b", Message: &message.Message{ID: "1", To: "uds:/x.sock", Body: "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := n.resign(kept)
	if err != nil {
		t.Fatal(err)
	}
	e, r := parse(fresh, "b")
	if r != 0 {
		t.Fatal(r)
	}
	k, _ := parse(kept, "b")
	if _, r := verify(domainEnvelope, &e, &e.seal); r != 0 || time.Since(time.UnixMilli(e.SignedAt)) > time.Minute || e.Nonce == k.Nonce || e.Message.Body != "hi" {
		t.Fatalf("re-signed %s (%v)", fresh, r)
	}
	if _, err := testNode(t, "c").resign(kept); err == nil {
		t.Fatal("another host's envelope re-signed")
	}
}

// BenchmarkSignAndVerify is what signing adds to one message on its way:
// the sender's encode and the receiver's parse and check.
func BenchmarkSignAndVerify(b *testing.B) {
	sg := testSigner(b)
	e := envelope{Kind: kindMessage, From: "a", To: "b", Message: &message.Message{ID: "0123456789abcdef", To: "uds:/run/x.sock", FromName: "lead", Body: strings.Repeat("x", 200), Time: time.Now()}}
	for b.Loop() {
		raw, err := sg.envelope(e)
		if err != nil {
			b.Fatal(err)
		}
		got, r := parse(raw, "b")
		if r != 0 {
			b.Fatal(r)
		}
		if _, r := verify(domainEnvelope, &got, &got.seal); r != 0 {
			b.Fatal(r)
		}
	}
}
