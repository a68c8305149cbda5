package claude

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/message"
)

func TestHopToken(t *testing.T) {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i)
	}
	// Expected values from Node's createHmac("sha256", key).update(address)
	// .digest("hex").slice(0, 24), which is how Claude Code computes them.
	tests := []struct {
		name, address, want string
	}{
		{"a uds address hashes with its prefix", "uds:/tmp/cc-socks/1234.sock", "f5fd5572d1f456ae35cef0bf"},
		{"a bridge address hashes the same way", "bridge:session_01abc", "79a8ace62a9b04bb304a715d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HopToken(key, tt.address)
			if got != tt.want {
				t.Fatalf("HopToken = %s, want %s", got, tt.want)
			}
			if !message.IsHopToken(got) {
				t.Fatalf("%q does not fit the hop-chain grammar", got)
			}
		})
	}
	t.Run("another key gives another token", func(t *testing.T) {
		other := bytes.Repeat([]byte{7}, 32)
		if HopToken(other, tests[0].address) == tests[0].want {
			t.Fatal("the key made no difference")
		}
	})
}

func TestNewHopKey(t *testing.T) {
	t.Run("two boots draw different 32-byte keys", func(t *testing.T) {
		a, err := NewHopKey()
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewHopKey()
		if err != nil {
			t.Fatal(err)
		}
		if len(a) != 32 || len(b) != 32 || bytes.Equal(a, b) {
			t.Fatalf("keys %x and %x", a, b)
		}
	})
}

func TestAppendHop(t *testing.T) {
	tok := func(i int) string { return strings.Repeat(string("0123456789abcdef"[i%16]), 24) }
	chain := func(n int) []string {
		c := make([]string, n)
		for i := range c {
			c[i] = tok(i)
		}
		return c
	}
	tests := []struct {
		name  string
		in    []string
		tok   string
		wantN int
		last  string
	}{
		{"appending to nothing makes a one-entry chain", nil, tok(1), 1, tok(1)},
		{"appending adds at the end", chain(3), tok(9), 4, tok(9)},
		{"an empty token appends nothing", chain(3), "", 3, tok(2)},
		{"a full chain drops its oldest entry", chain(32), tok(9), 32, tok(9)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := slices.Clone(tt.in)
			got := AppendHop(tt.in, tt.tok)
			if len(got) != tt.wantN || got[len(got)-1] != tt.last {
				t.Fatalf("AppendHop = %v", got)
			}
			if !slices.Equal(tt.in, orig) {
				t.Fatal("the input chain was changed")
			}
			if err := (Envelope{HopChain: got}).Validate(); err != nil {
				t.Fatalf("result does not validate: %v", err)
			}
		})
	}
	t.Run("the result never aliases the input", func(t *testing.T) {
		in := make([]string, 2, 10)
		in[0], in[1] = tok(0), tok(1)
		got := AppendHop(in, tok(2))
		got[0] = "changed"
		if in[0] != tok(0) {
			t.Fatal("writing the result changed the input")
		}
		AppendHop(in, tok(3))
		if in[:3][2] == tok(3) {
			t.Fatal("appending wrote into the input's spare capacity")
		}
	})
}
