package federation

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
)

func TestSanitizeHost(t *testing.T) {
	for in, want := range map[string]string{
		"Laptop.local":          "laptop",
		"build_server-01":       "build-server-01",
		"--weird__name--":       "weird-name",
		"":                      "gateway",
		"ÜBER":                  "ber",
		strings.Repeat("a", 70): strings.Repeat("a", 63),
	} {
		got := SanitizeHost(in)
		if got != want || !ValidHost(got) {
			t.Errorf("SanitizeHost(%q) = %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"", "a.b", "A", "-a", "a-", "a*", "a>", strings.Repeat("a", 64)} {
		if ValidHost(bad) {
			t.Errorf("ValidHost(%q)", bad)
		}
	}
}

// testSigner signs as a host of the tests.
func testSigner(t testing.TB) *signer {
	t.Helper()
	_, k, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return newSigner(k, clock.Real{})
}

func TestParseSaysWhyItDrops(t *testing.T) {
	sg := testSigner(t)
	ok, err := sg.envelope(envelope{Kind: kindMessage, From: "a", To: "b", Message: &message.Message{ID: "1", To: "uds:/x.sock"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		in   string
		want Reason
	}{
		"good":            {string(ok), 0},
		"oversized":       {strings.Repeat(" ", MaxEnvelope+1), ReasonOversized},
		"not json":        {"{", ReasonMalformed},
		"no version":      {`{"kind":"message"}`, ReasonVersion},
		"future version":  {`{"v":2}`, ReasonVersion},
		"unknown kind":    {`{"v":1,"kind":"x","from_host":"a","to_host":"b"}`, ReasonMalformed},
		"bad host":        {`{"v":1,"kind":"message","from_host":"a.b","to_host":"b","message":{"id":"1","to":"x"}}`, ReasonMalformed},
		"both bodies":     {`{"v":1,"kind":"message","from_host":"a","to_host":"b","message":{"id":"1","to":"x"},"receipt":{"msg_id":"1","status":"sent"}}`, ReasonMalformed},
		"unknown status":  {`{"v":1,"kind":"receipt","from_host":"a","to_host":"b","receipt":{"msg_id":"1","status":"gone"}}`, ReasonMalformed},
		"trailing data":   {string(ok) + "{}", ReasonMalformed},
		"long id":         {`{"v":1,"kind":"message","from_host":"a","to_host":"b","message":{"id":"` + strings.Repeat("i", maxID+1) + `","to":"x"}}`, ReasonMalformed},
		"another host's":  {`{"v":1,"kind":"message","from_host":"a","to_host":"c","message":{"id":"1","to":"x"}}`, ReasonMisrouted},
		"a receipt for b": {`{"v":1,"kind":"receipt","from_host":"a","to_host":"b","receipt":{"msg_id":"1","status":"held"}}`, 0},
		"receipts for b":  {`{"v":1,"kind":"receipts","from_host":"a","to_host":"b","receipts":[{"msg_id":"1","status":"held"},{"msg_id":"1","status":"delivered"}]}`, 0},
		"no receipts":     {`{"v":1,"kind":"receipts","from_host":"a","to_host":"b","receipts":[]}`, ReasonMalformed},
		"a bad receipt":   {`{"v":1,"kind":"receipts","from_host":"a","to_host":"b","receipts":[{"msg_id":"1","status":"held"},{"msg_id":"","status":"held"}]}`, ReasonMalformed},
		"too many":        {`{"v":1,"kind":"receipts","from_host":"a","to_host":"b","receipts":[` + strings.Repeat(`{"msg_id":"1","status":"held"},`, maxReceiptBatch) + `{"msg_id":"1","status":"held"}]}`, ReasonMalformed},
		"one and many":    {`{"v":1,"kind":"receipts","from_host":"a","to_host":"b","receipt":{"msg_id":"1","status":"held"},"receipts":[{"msg_id":"1","status":"held"}]}`, ReasonMalformed},
	} {
		if _, got := parse([]byte(c.in), "b"); got != c.want {
			t.Errorf("%s: reason %v, want %v", name, got, c.want)
		}
	}
	if _, err := sg.envelope(envelope{Kind: kindMessage, From: "a", To: "b", Message: &message.Message{ID: "1", Body: strings.Repeat("x", MaxEnvelope)}}); err == nil {
		t.Error("encode wrote an envelope over the cap")
	}
}

func FuzzDecode(f *testing.F) {
	sg := testSigner(f)
	ok, _ := sg.envelope(envelope{Kind: kindMessage, From: "a", To: "b", Message: &message.Message{ID: "1", To: "uds:/x.sock", Body: "hi"}})
	rc, _ := sg.envelope(envelope{Kind: kindReceipt, From: "a", To: "b", Receipt: &message.Receipt{MsgID: "1", Status: message.StatusDropped, DropReason: message.DropDuplicate}})
	rcs, _ := sg.envelope(envelope{Kind: kindReceipts, From: "a", To: "b", Receipts: []message.Receipt{{MsgID: "1", Status: message.StatusHeld}, {MsgID: "1", Status: message.StatusDelivered}}})
	for _, s := range [][]byte{ok, rc, rcs, []byte(`{"v":1}`), []byte(`{"v":1e400}`), []byte(`[]`), []byte(`null`)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, r := parse(b, "b")
		if r != 0 {
			return
		}
		// What is accepted re-encodes, and reads back the same way.
		again, err := sg.envelope(e)
		if err != nil {
			t.Fatalf("accepted %q but cannot re-encode: %v", b, err)
		}
		if _, r := parse(again, "b"); r != 0 {
			t.Fatalf("re-encoded %q dropped: %v", again, r)
		}
	})
}

func TestRedactURLs(t *testing.T) {
	if got := redactURLs("nats://u:p@h:4222, nats://h2:4222"); got != "nats://***@h:4222,nats://h2:4222" {
		t.Fatal(got)
	}
}

func TestAConnectErrorNeverShowsAPassword(t *testing.T) {
	n := &Node{cfg: Config{Clock: clock.Real{}, Host: "a"}}
	err := n.connect("nats://u:p1secret@127.0.0.1:1,nats://u2:pw2secret@[::1")
	if err == nil {
		t.Fatal("connected to an unparsable URL")
	}
	if msg := err.Error(); strings.Contains(msg, "secret") {
		t.Fatalf("the error shows a password: %s", msg)
	}
}
