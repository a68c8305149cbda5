package auth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
)

// testSeed is the key the helper signer program signs with.
var testSeed = bytes.Repeat([]byte{7}, ed25519.SeedSize)

const helperArg = "auth-test-signer-helper"

// TestMain lets the test binary double as the exec signer's program: run as
// `auth.test auth-test-signer-helper MODE`, it behaves as MODE says and exits.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == helperArg {
		os.Exit(signerHelper(os.Args[2]))
	}
	// Under -race every helper run would otherwise sleep a second on exit.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

func signerHelper(mode string) int {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "read stdin:", err)
		return 2
	}
	priv := ed25519.NewKeyFromSeed(testSeed)
	minimal := Attestation{Algorithm: AlgEd25519, KeyID: KeyID(priv.Public().(ed25519.PublicKey)), Signature: ed25519.Sign(priv, in)}
	full := minimal
	full.Type, full.Canonicalization, full.PayloadSHA256 = ClientEventV1, CanonicalizationJCS, digest(in)
	out := func(v any) int {
		b, _ := json.Marshal(v)
		os.Stdout.Write(b)
		return 0
	}
	switch mode {
	case "minimal":
		return out(minimal)
	case "full":
		return out(full)
	case "none":
		return out(map[string]string{"algorithm": "none"})
	case "wrong-digest":
		full.PayloadSHA256 = digest([]byte("other bytes"))
		return out(full)
	case "wrong-type":
		full.Type = SessionBindV1
		return out(full)
	case "misspelt-field":
		return out(map[string]any{"algorithm": "ed25519", "keyId": minimal.KeyID, "sig": minimal.Signature})
	case "no-signature":
		return out(map[string]any{"algorithm": "ed25519", "keyId": minimal.KeyID})
	case "two-values":
		out(full)
		return out(full)
	case "garbage":
		fmt.Print("signed, trust me")
		return 0
	case "fail":
		fmt.Fprintln(os.Stderr, "device locked: touch the key")
		return 3
	case "long-stderr":
		fmt.Fprint(os.Stderr, strings.Repeat("noise ", 4000)+"THE END")
		return 1
	case "flood":
		chunk := bytes.Repeat([]byte("x"), 4096)
		for range 1024 {
			if _, err := os.Stdout.Write(chunk); err != nil {
				return 4
			}
		}
		return 0
	case "hang":
		time.Sleep(time.Hour)
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown mode", mode)
	return 2
}

func helper(t *testing.T, mode string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, helperArg, mode}
}

var payload = []byte(`{"content":"hello","type":"user","uuid":"2d1f0c1e-0000-4000-8000-000000000001"}`)

func testPub() ed25519.PublicKey {
	return ed25519.NewKeyFromSeed(testSeed).Public().(ed25519.PublicKey)
}

func TestNoneSignerAttestsNothing(t *testing.T) {
	a, err := NewNoneSigner().Sign(context.Background(), payload)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	want := Attestation{Type: ClientEventV1, Canonicalization: CanonicalizationJCS, Algorithm: AlgNone, PayloadSHA256: digest(payload)}
	if !equalAttestation(a, want) {
		t.Fatalf("got %+v, want %+v", a, want)
	}
	if a.Signed() {
		t.Fatal("an algorithm-none attestation says it is signed")
	}
	if err := Verify(a, payload, testPub()); !errors.Is(err, ErrUnsigned) {
		t.Fatalf("Verify of an unsigned attestation = %v, want ErrUnsigned", err)
	}
}

func equalAttestation(a, b Attestation) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// writeKey writes b to a fresh file with mode perm and returns its path.
func writeKey(t *testing.T, b []byte, perm os.FileMode) string {
	return testutil.WriteFile(t, filepath.Join(t.TempDir(), "device.key"), b, perm)
}

func pemKey(t *testing.T, key any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func TestEd25519FileSignerRoundTrip(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(testSeed)
	tests := []struct {
		name string
		file []byte
		perm os.FileMode
	}{
		{"a PEM PKCS#8 key signs what Verify accepts", pemKey(t, priv), 0o600},
		{"a raw 32-byte seed signs what Verify accepts", testSeed, 0o600},
		{"a raw 64-byte key signs what Verify accepts", priv, 0o600},
		{"a read-only key file is fine", testSeed, 0o400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewEd25519FileSigner(writeKey(t, tt.file, tt.perm))
			if err != nil {
				t.Fatalf("NewEd25519FileSigner: %v", err)
			}
			a, err := s.Sign(context.Background(), payload)
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			if a.KeyID != KeyID(testPub()) || !a.Signed() || a.Algorithm != AlgEd25519 {
				t.Fatalf("attestation %+v: wrong key id, algorithm or no signature", a)
			}
			if err := Verify(a, payload, testPub()); err != nil {
				t.Fatalf("Verify: %v", err)
			}
		})
	}
}

func TestVerifyRefuses(t *testing.T) {
	s, err := NewEd25519FileSigner(writeKey(t, testSeed, 0o600))
	if err != nil {
		t.Fatal(err)
	}
	good, err := s.Sign(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	otherPub, _, _ := ed25519.GenerateKey(rand.Reader)
	tests := []struct {
		name    string
		change  func(a *Attestation) // applied to a copy of good
		payload []byte
		pub     ed25519.PublicKey
		want    error
	}{
		{"other bytes than were signed", nil, []byte(`{"content":"hellO"}`), testPub(), ErrDigestMismatch},
		{"a signature checked against another key", nil, payload, otherPub, ErrKeyMismatch},
		{"a flipped signature bit", func(a *Attestation) { a.Signature[0] ^= 1 }, payload, testPub(), ErrBadSignature},
		{"a digest rewritten to match other bytes", func(a *Attestation) { a.PayloadSHA256 = digest([]byte("x")) }, []byte("x"), testPub(), ErrBadSignature},
		{"another message type", func(a *Attestation) { a.Type = SessionBindV1 }, payload, testPub(), ErrWrongType},
		{"an algorithm it does not know", func(a *Attestation) { a.Algorithm = "p256" }, payload, testPub(), ErrUnknownAlgorithm},
		{"algorithm none", func(a *Attestation) { a.Algorithm = AlgNone }, payload, testPub(), ErrUnsigned},
	}
	for _, tt := range tests {
		t.Run(tt.name+" does not verify", func(t *testing.T) {
			a := good
			a.Signature = bytes.Clone(good.Signature)
			if tt.change != nil {
				tt.change(&a)
			}
			if err := Verify(a, tt.payload, tt.pub); !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestEd25519FileSignerRefuses(t *testing.T) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	badPair := append(bytes.Clone(testSeed), bytes.Repeat([]byte{1}, 32)...)
	symlinkTo := func(t *testing.T) string {
		target := writeKey(t, testSeed, 0o600)
		link := filepath.Join(t.TempDir(), "link.key")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		return link
	}
	tests := []struct {
		name string
		path func(t *testing.T) string
		want error
	}{
		{"a key readable by its group", func(t *testing.T) string { return writeKey(t, testSeed, 0o640) }, ErrKeyFileMode},
		{"a key readable by everyone", func(t *testing.T) string { return writeKey(t, testSeed, 0o644) }, ErrKeyFileMode},
		{"a key writable by others only", func(t *testing.T) string { return writeKey(t, testSeed, 0o602) }, ErrKeyFileMode},
		{"a symlink to a good key", symlinkTo, ErrKeyFileSymlink},
		{"a directory", func(t *testing.T) string { d := filepath.Join(t.TempDir(), "k"); os.Mkdir(d, 0o700); return d }, ErrKeyFileType},
		{"a missing file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none") }, os.ErrNotExist},
		{"a 31-byte raw key", func(t *testing.T) string { return writeKey(t, testSeed[:31], 0o600) }, ErrKeyFormat},
		{"a raw seed with a trailing newline", func(t *testing.T) string { return writeKey(t, append(bytes.Clone(testSeed), '\n'), 0o600) }, ErrKeyFormat},
		{"a 64-byte key whose halves do not match", func(t *testing.T) string { return writeKey(t, badPair, 0o600) }, ErrKeyFormat},
		{"a PKCS#8 key that is not Ed25519", func(t *testing.T) string { return writeKey(t, pemKey(t, ecKey), 0o600) }, ErrKeyFormat},
		{"a PEM block of another type", func(t *testing.T) string {
			return writeKey(t, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1}}), 0o600)
		}, ErrKeyFormat},
		{"a huge file", func(t *testing.T) string { return writeKey(t, make([]byte, 1<<20), 0o600) }, ErrKeyFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			s, err := NewEd25519FileSigner(tt.path(t))
			if !errors.Is(err, tt.want) {
				t.Fatalf("NewEd25519FileSigner = %v, %v; want %v", s, err, tt.want)
			}
		})
	}
}

func TestExecSignerAccepts(t *testing.T) {
	tests := []struct {
		name   string
		mode   string
		signed bool
	}{
		{"a program that writes only algorithm, key id and signature gets the rest filled in", "minimal", true},
		{"a program that writes a full attestation", "full", true},
		{"a program that declines to sign", "none", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := NewExecSigner(helper(t, tt.mode), time.Minute).Sign(context.Background(), payload)
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			if a.Type != ClientEventV1 || a.Canonicalization != CanonicalizationJCS || a.PayloadSHA256 != digest(payload) {
				t.Fatalf("attestation %+v: envelope not filled in", a)
			}
			err = Verify(a, payload, testPub())
			switch {
			case tt.signed && err != nil:
				t.Fatalf("Verify: %v", err)
			case !tt.signed && !errors.Is(err, ErrUnsigned):
				t.Fatalf("Verify = %v, want ErrUnsigned", err)
			}
		})
	}
}

func TestExecSignerRefuses(t *testing.T) {
	tests := []struct {
		name       string
		argv       func(t *testing.T) []string
		timeout    time.Duration
		want       error
		stderrHas  string
		exitStatus int
	}{
		{"no program at all", func(*testing.T) []string { return nil }, 0, ErrExecNoProgram, "", -1},
		{"a program that does not exist", func(t *testing.T) []string { return []string{filepath.Join(t.TempDir(), "nope")} }, 0, ErrExecFailed, "", -1},
		{"a program that exits non-zero", func(t *testing.T) []string { return helper(t, "fail") }, 0, ErrExecFailed, "device locked", 3},
		{"a program that hangs", func(t *testing.T) []string { return helper(t, "hang") }, 200 * time.Millisecond, ErrExecTimeout, "", -1},
		{"a program that floods stdout", func(t *testing.T) []string { return helper(t, "flood") }, time.Minute, ErrExecOutputTooLarge, "", -2},
		{"a program that writes garbage", func(t *testing.T) []string { return helper(t, "garbage") }, time.Minute, ErrExecBadOutput, "", 0},
		{"a program that attests other bytes", func(t *testing.T) []string { return helper(t, "wrong-digest") }, time.Minute, ErrDigestMismatch, "", 0},
		{"a program that writes another message type", func(t *testing.T) []string { return helper(t, "wrong-type") }, time.Minute, ErrWrongType, "", 0},
		{"a program that misspells a field", func(t *testing.T) []string { return helper(t, "misspelt-field") }, time.Minute, ErrExecBadOutput, "", 0},
		{"a program that claims ed25519 with no signature", func(t *testing.T) []string { return helper(t, "no-signature") }, time.Minute, ErrExecBadOutput, "", 0},
		{"a program that writes two attestations", func(t *testing.T) []string { return helper(t, "two-values") }, time.Minute, ErrExecBadOutput, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is an error", func(t *testing.T) {
			_, err := NewExecSigner(tt.argv(t), tt.timeout).Sign(context.Background(), payload)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Sign = %v, want %v", err, tt.want)
			}
			var e *ExecError
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *ExecError", err)
			}
			if !strings.Contains(e.Stderr, tt.stderrHas) || !strings.Contains(err.Error(), tt.stderrHas) {
				t.Fatalf("error %q: want stderr %q quoted", err, tt.stderrHas)
			}
			if tt.exitStatus != -2 && e.ExitCode != tt.exitStatus {
				t.Fatalf("exit code %d, want %d", e.ExitCode, tt.exitStatus)
			}
		})
	}
}

func TestExecSignerQuotesOnlyTheTailOfStderr(t *testing.T) {
	_, err := NewExecSigner(helper(t, "long-stderr"), time.Minute).Sign(context.Background(), payload)
	var e *ExecError
	if !errors.As(err, &e) {
		t.Fatalf("Sign = %v, want an *ExecError", err)
	}
	if !strings.HasSuffix(e.Stderr, "THE END") || len(e.Stderr) > execStderrTail {
		t.Fatalf("stderr tail is %d bytes ending %q", len(e.Stderr), e.Stderr[max(0, len(e.Stderr)-20):])
	}
}

func TestExecSignerStopsWhenTheCallerGivesUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := NewExecSigner(helper(t, "hang"), time.Minute).Sign(ctx, payload)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrExecTimeout) {
		t.Fatalf("Sign = %v, want context.Canceled", err)
	}
}

func TestExecSignerDoesNotShareTheCallersArgv(t *testing.T) {
	argv := helper(t, "full")
	s := NewExecSigner(argv, time.Minute)
	argv[2] = "fail"
	if _, err := s.Sign(context.Background(), payload); err != nil {
		t.Fatalf("Sign after the caller changed its slice: %v", err)
	}
}

func TestBindMessagesJSON(t *testing.T) {
	att := &Attestation{Type: ClientEventV1, Canonicalization: CanonicalizationJCS, Algorithm: AlgEd25519,
		KeyID: "ab", PayloadSHA256: "cd", Signature: []byte{1, 2, 3}}
	tests := []struct {
		name string
		v    any
		into any
		want string
	}{
		{"a create_session_bind with a key and attestation", CreateSessionBind{
			Type: CreateSessionBindV1, SessionID: "session_01", BoundDeviceUUID: "0b6c3d5e-1111-4222-8333-944455556666",
			Algorithm: AlgEd25519, KeyID: "ab", PublicKey: []byte{9}, Attestation: att,
		}, &CreateSessionBind{},
			`{"type":"anthropic.ccr.create_session_bind.v1","sessionId":"session_01","boundDeviceUuid":"0b6c3d5e-1111-4222-8333-944455556666",` +
				`"algorithm":"ed25519","keyId":"ab","publicKey":"CQ==","attestation":{"type":"anthropic.ccr.client_event.v1",` +
				`"canonicalization":"claude-code-jcs@1","algorithm":"ed25519","keyId":"ab","payloadSha256":"cd","signature":"AQID"}}`},
		{"an unattested create_session_bind omits key and attestation", CreateSessionBind{
			Type: CreateSessionBindV1, SessionID: "session_01", BoundDeviceUUID: "d", Algorithm: AlgNone,
		}, &CreateSessionBind{},
			`{"type":"anthropic.ccr.create_session_bind.v1","sessionId":"session_01","boundDeviceUuid":"d","algorithm":"none"}`},
		{"a session_bind", SessionBind{
			Type: SessionBindV1, SessionID: "session_01", BoundDeviceUUID: "d", Algorithm: AlgEd25519, KeyID: "ab", BoundAt: "2026-01-02T03:04:05Z",
		}, &SessionBind{},
			`{"type":"anthropic.ccr.session_bind.v1","sessionId":"session_01","boundDeviceUuid":"d","algorithm":"ed25519","keyId":"ab","boundAt":"2026-01-02T03:04:05Z"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name+" has its documented JSON and decodes back", func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("got  %s\nwant %s", b, tt.want)
			}
			if err := json.Unmarshal(b, tt.into); err != nil {
				t.Fatal(err)
			}
			again, _ := json.Marshal(tt.into)
			if !bytes.Equal(again, b) {
				t.Fatalf("round trip changed %s into %s", b, again)
			}
		})
	}
}
