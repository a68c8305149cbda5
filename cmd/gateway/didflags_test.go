package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/internal/testutil"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/addressing/didfile"
	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
)

func writeDIDFile(t *testing.T, body string, perm os.FileMode) string {
	return testutil.WriteFile(t, filepath.Join(t.TempDir(), "dids.json"), []byte(body), perm)
}

func TestDIDFileFlag(t *testing.T) {
	good := writeDIDFile(t, `{"did:web:example.com:alice": "work-08"}`, 0o600)
	other := writeDIDFile(t, `{"did:web:example.com:bob": "work-09"}`, 0o600)
	open := writeDIDFile(t, `{"did:web:example.com:alice": "work-08"}`, 0o666)
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		file    string // the file the resolver reads; "" for none
		wantErr string
	}{
		{"without the flag or its variable there is no resolver", nil, nil, "", ""},
		{"the flag names the file", nil, []string{"--did-file", good}, good, ""},
		{"GATEWAY_DID_FILE names the file", map[string]string{"GATEWAY_DID_FILE": good}, nil, good, ""},
		{"the flag wins over the variable", map[string]string{"GATEWAY_DID_FILE": other}, []string{"--did-file", good}, good, ""},
		{"a missing file is refused at start", nil, []string{"--did-file", good + ".gone"}, "", "no such file"},
		{"a world-writable file is refused at start", nil, []string{"--did-file", open}, "", "chmod go-w"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &env{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string { return tt.env[k] }}
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			p := didFileFlag(fs, e)
			if _, _, err := loadSettings(fs, e, tt.args); err != nil {
				t.Fatal(err)
			}
			r, err := openDIDFile(*p)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("openDIDFile(%q) = %v, want an error containing %q", *p, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.file == "" {
				if r != nil {
					t.Fatalf("got resolver %#v, want a nil interface", r)
				}
				return
			}
			if fr, ok := r.(*didfile.Resolver); !ok || fr.Path() != tt.file {
				t.Fatalf("got %#v, want the resolver of %s", r, tt.file)
			}
		})
	}
}

func TestServeStopsOnABadDIDFile(t *testing.T) {
	bad := writeDIDFile(t, `{"did:web:a": "did:web:b"}`, 0o600)
	var stderr bytes.Buffer
	e := &env{stdout: io.Discard, stderr: &stderr, getenv: func(string) string { return "" }}
	code := run(context.Background(), e, []string{"serve", "--state-dir", t.TempDir(), "--legs", "none", "--did-file", bad})
	if code != exitUsage || !strings.Contains(stderr.String(), "--did-file") || !strings.Contains(stderr.String(), bad) {
		t.Fatalf("exit %d, stderr %q; want a usage error naming the flag and the file", code, stderr.String())
	}
}

func TestSendByDID(t *testing.T) {
	path := writeDIDFile(t, `{"did:web:example.com:alice": "work-08"}`, 0o600)
	g := startBinary(t, t.TempDir(), "--did-file", path)
	fk := newFake(t, g, "work-08", message.ModePrompting)
	t.Run("a listed DID reaches the session its address names", func(t *testing.T) {
		out, err := g.Send(ctxT(t), api.SendBody{To: "did:web:example.com:alice", Text: "hello by did"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fk.WaitReceived(ctxT(t), func(r fakeclaude.Received) bool { return r.Frame.MsgID == out.Message.ID }); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("an unlisted DID is a 404 naming the DID and the file", func(t *testing.T) {
		_, err := g.Send(ctxT(t), api.SendBody{To: "did:web:example.com:carol", Text: "hello?"})
		var ae *api.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusNotFound ||
			!strings.Contains(err.Error(), "did:web:example.com:carol") || !strings.Contains(err.Error(), path) {
			t.Fatalf("got %v, want a 404 naming the DID and %s", err, path)
		}
	})
	t.Run("a DID added to the file later is reached without a restart", func(t *testing.T) {
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(`{"did:web:example.com:alice": "work-08", "did:key:z6MkCarol": "`+fk.Address()+`"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		out, err := g.Send(ctxT(t), api.SendBody{To: "did:key:z6MkCarol", Text: "hello again"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fk.WaitReceived(ctxT(t), func(r fakeclaude.Received) bool { return r.Frame.MsgID == out.Message.ID }); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a DID file removed while serving is a 503, not a 500", func(t *testing.T) {
		if err := os.Rename(path, path+".gone"); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(path+".gone", path)
		_, err := g.Send(ctxT(t), api.SendBody{To: "did:web:example.com:alice", Text: "hello?"})
		var ae *api.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || !strings.Contains(err.Error(), "did") {
			t.Fatalf("got %v, want a 503 about the did file", err)
		}
	})
	t.Run("without a DID file a DID is refused saying none is configured", func(t *testing.T) {
		g2 := startBinary(t, t.TempDir())
		_, err := g2.Send(ctxT(t), api.SendBody{To: "did:web:example.com:alice", Text: "hi"})
		if err == nil || !strings.Contains(err.Error(), addressing.ErrNoDIDResolver.Error()) {
			t.Fatalf("got %v, want %v", err, addressing.ErrNoDIDResolver)
		}
	})
}
