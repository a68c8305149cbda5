package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRemoteFlags(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string
		check   func(t *testing.T, o *remoteOpts)
	}{
		{"no credentials means no remote leg", nil, nil, "",
			func(t *testing.T, o *remoteOpts) {
				if o.enabled() {
					t.Error("enabled without credentials")
				}
			}},
		{"a token file defaults to the API URL, the WebSocket and no signer", nil,
			[]string{"--remote-token-file", "/x/token", "--remote-follow", "all"}, "",
			func(t *testing.T, o *remoteOpts) {
				if !o.enabled() || o.url != defaultRemoteURL || o.transport != "ws" || o.signer != "none" || strings.Join(o.follow, ",") != "all" {
					t.Errorf("opts = %+v", o)
				}
			}},
		{"a session key defaults to the web URL", nil,
			[]string{"--remote-session-key-file", "/x/key"}, "",
			func(t *testing.T, o *remoteOpts) {
				if o.url != defaultRemoteWebURL {
					t.Errorf("url = %q", o.url)
				}
			}},
		{"every flag can come from its GATEWAY_REMOTE_ variable",
			map[string]string{"GATEWAY_REMOTE_URL": "http://127.0.0.1:9/", "GATEWAY_REMOTE_ORG": "org-1",
				"GATEWAY_REMOTE_TOKEN_FILE": "/x/t", "GATEWAY_REMOTE_FOLLOW": "session_a, session_b",
				"GATEWAY_REMOTE_TRANSPORT": "sse"}, nil, "",
			func(t *testing.T, o *remoteOpts) {
				if o.url != "http://127.0.0.1:9" || o.org != "org-1" || o.tokenFile != "/x/t" || o.transport != "sse" ||
					strings.Join(o.follow, ",") != "session_a,session_b" {
					t.Errorf("opts = %+v", o)
				}
			}},
		{"a flag wins over its variable, and --remote-follow replaces the variable's list",
			map[string]string{"GATEWAY_REMOTE_TRANSPORT": "sse", "GATEWAY_REMOTE_FOLLOW": "session_a", "GATEWAY_REMOTE_TOKEN_FILE": "/x/t"},
			[]string{"--remote-transport", "ws", "--remote-follow", "session_c", "--remote-follow", "session_d"}, "",
			func(t *testing.T, o *remoteOpts) {
				if o.transport != "ws" || strings.Join(o.follow, ",") != "session_c,session_d" {
					t.Errorf("opts = %+v", o)
				}
			}},
		{"the idle cut-off is off unless asked for, and reads GATEWAY_REMOTE_IDLE",
			map[string]string{"GATEWAY_REMOTE_IDLE": "5m", "GATEWAY_REMOTE_TOKEN_FILE": "/x/t"}, nil, "",
			func(t *testing.T, o *remoteOpts) {
				if o.idle != 5*time.Minute {
					t.Errorf("idle = %s, want 5m", o.idle)
				}
			}},
		{"a GATEWAY_REMOTE_IDLE that is not a duration is refused",
			map[string]string{"GATEWAY_REMOTE_IDLE": "soon", "GATEWAY_REMOTE_TOKEN_FILE": "/x/t"}, nil, "not a duration", nil},
		{"a negative --remote-idle is refused", nil, []string{"--remote-token-file", "/a", "--remote-idle", "-1s"}, "want 0", nil},
		{"two kinds of credentials are refused", nil,
			[]string{"--remote-token-file", "/a", "--remote-session-key-file", "/b"}, "exclude each other", nil},
		{"following without credentials is refused", nil, []string{"--remote-follow", "all"}, "need credentials", nil},
		{"an unknown transport is refused", nil, []string{"--remote-token-file", "/a", "--remote-transport", "grpc"}, "want ws or sse", nil},
		{"a URL with a path is refused", nil, []string{"--remote-token-file", "/a", "--remote-url", "https://h/v1"}, "want http(s)://host", nil},
		{"a follow id that is not a session id is refused", nil, []string{"--remote-token-file", "/a", "--remote-follow", "../x"}, "not a session id", nil},
		{"an unknown signer is refused", nil, []string{"--remote-token-file", "/a", "--remote-signer", "hsm"}, "want none, ed25519-file:PATH or exec:COMMAND", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &env{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string { return tt.env[k] }}
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o := remoteFlags(fs, e)
			_, _, err := loadSettings(fs, e, tt.args) // variables reach the flags through the configuration layer
			if err == nil {
				err = o.check()
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("check() = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
}

// TestRemoteOnlyFlagsAreWarnedOfWhileTheRemoteLegIsOff: serve says once
// at start which remote flags, set on any layer, change nothing.
func TestRemoteOnlyFlagsAreWarnedOfWhileTheRemoteLegIsOff(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		args []string
		want string // the one warning; "" for none
	}{
		{"a remote flag without the remote leg is named", nil, []string{"--legs", "claude,qwen", "--remote-signer", "exec:sign"},
			"--remote-signer has no effect: the remote leg is off (--legs claude,qwen)"},
		{"several are named in one warning", nil, []string{"--legs", "claude", "--remote-reply", "assistant", "--remote-transport", "sse"},
			"--remote-transport, --remote-reply have no effect: the remote leg is off (--legs claude)"},
		{"one from a variable says so", map[string]string{"GATEWAY_REMOTE_IDLE": "5m"}, nil,
			"--remote-idle has no effect: the remote leg is off (--legs claude,qwen) (--remote-idle came from GATEWAY_REMOTE_IDLE)"},
		{"a flag left at its default is not named", nil, []string{"--legs", "qwen"}, ""},
		{"none while credentials turn the remote leg on", nil, []string{"--legs", "claude", "--remote-token-file", "/x/t", "--remote-signer", "none", "--remote-idle", "5m"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"GATEWAY_STATE_DIR": t.TempDir()}
			for k, v := range tt.vars {
				vars[k] = v
			}
			plan, stderr := setup(t, vars, tt.args...)
			if plan == nil {
				t.Fatalf("setup failed: %s", stderr)
			}
			var want []string
			if tt.want != "" {
				want = []string{tt.want}
			}
			if !slices.Equal(plan.warnings, want) {
				t.Errorf("warnings = %q, want %q", plan.warnings, want)
			}
		})
	}
}

// TestEveryRemoteFlagIsACredentialOrOnlyTunesTheLeg keeps remoteTuning in
// step with the flags remoteFlags registers.
func TestEveryRemoteFlagIsACredentialOrOnlyTunesTheLeg(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	remoteFlags(fs, &env{getenv: func(string) string { return "" }})
	credentials := []string{"remote-token-file", "remote-session-key-file", "remote-claude-credentials"}
	fs.VisitAll(func(f *flag.Flag) {
		if !slices.Contains(remoteTuning, f.Name) && !slices.Contains(credentials, f.Name) {
			t.Errorf("--%s is neither a credential nor in remoteTuning", f.Name)
		}
	})
}
