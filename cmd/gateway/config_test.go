package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/cli"

	"github.com/sessiongateway/gateway/internal/testutil"

	"github.com/sessiongateway/gateway/internal/settings"
)

// writeConf writes a file with perm into dir and returns its path.
func writeConf(t *testing.T, dir, name, body string, perm os.FileMode) string {
	return testutil.WriteFile(t, filepath.Join(dir, name), []byte(body), perm)
}

// runGateway runs a gateway command with exactly the variables in vars.
func runGateway(t *testing.T, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }}
	code = run(context.Background(), e, args)
	return code, out.String(), errb.String()
}

// setup runs serve's configuration layer and checks without serving.
func setup(t *testing.T, vars map[string]string, args ...string) (*servePlan, string) {
	t.Helper()
	var errb bytes.Buffer
	e := &env{stdout: &bytes.Buffer{}, stderr: &errb, getenv: func(k string) string { return vars[k] }}
	plan, err := serveFlags(e, newFlags(e, "serve"), nil)(args)
	if err != nil {
		cli.Report(&cli.IO{Stderr: &errb}, err)
	}
	return plan, errb.String()
}

func TestConfigPrecedence(t *testing.T) {
	tests := []struct {
		name  string
		file  string // <state-dir>/config.json; "" for none
		vars  map[string]string
		args  []string
		check func(t *testing.T, c serveConfig)
		from  map[string]settings.Source // the source each key must report
	}{
		{"without any layer every flag has its default", "", nil, nil,
			func(t *testing.T, c serveConfig) {
				if c.name != "gateway" || c.settle != 2*time.Second || !c.bridge || len(c.hosts) != 0 {
					t.Errorf("cfg = %+v", c)
				}
			}, map[string]settings.Source{"name": settings.Default, "settle": settings.Default, "allow-host": settings.Default}},
		{"the config file beats the default, for scalars, booleans and lists",
			`{"name": "filed", "settle": "3s", "bridge": false, "allow-host": ["a.example", "b.example"]}`, nil, nil,
			func(t *testing.T, c serveConfig) {
				if c.name != "filed" || c.settle != 3*time.Second || c.bridge || !reflect.DeepEqual(c.hosts, []string{"a.example", "b.example"}) {
					t.Errorf("cfg = %+v", c)
				}
			}, map[string]settings.Source{"name": settings.File, "settle": settings.File, "bridge": settings.File, "allow-host": settings.File}},
		{"a variable beats the file, and its comma list replaces the file's list",
			`{"name": "filed", "settle": "3s", "allow-host": ["a.example", "b.example"]}`,
			map[string]string{"GATEWAY_NAME": "envy", "GATEWAY_SETTLE": "4s", "GATEWAY_ALLOW_HOST": " c.example, ,d.example"}, nil,
			func(t *testing.T, c serveConfig) {
				if c.name != "envy" || c.settle != 4*time.Second || !reflect.DeepEqual(c.hosts, []string{"c.example", "d.example"}) {
					t.Errorf("cfg = %+v", c)
				}
			}, map[string]settings.Source{"name": settings.Env, "settle": settings.Env, "allow-host": settings.Env}},
		{"the command line beats the variable and the file, lists included",
			`{"name": "filed", "allow-host": ["a.example"]}`,
			map[string]string{"GATEWAY_NAME": "envy", "GATEWAY_ALLOW_HOST": "c.example", "GATEWAY_BRIDGE": "false"},
			[]string{"--name", "flagged", "--allow-host", "e.example", "--allow-host", "f.example", "--bridge"},
			func(t *testing.T, c serveConfig) {
				if c.name != "flagged" || !c.bridge || !reflect.DeepEqual(c.hosts, []string{"e.example", "f.example"}) {
					t.Errorf("cfg = %+v", c)
				}
			}, map[string]settings.Source{"name": settings.Flag, "allow-host": settings.Flag, "bridge": settings.Flag}},
		{"a layer that leaves a key alone lets the one below show through",
			`{"settle": "3s"}`, map[string]string{"GATEWAY_NAME": "envy"}, []string{"--log-level", "debug"},
			func(t *testing.T, c serveConfig) {
				if c.name != "envy" || c.settle != 3*time.Second {
					t.Errorf("cfg = %+v", c)
				}
			}, map[string]settings.Source{"name": settings.Env, "settle": settings.File, "log-level": settings.Flag, "mode": settings.Default}},
		{"the file understands comments",
			"// gateway settings\n{\n  /* who we are */ \"name\": \"gw // not a comment\", // trailing\n  \"bridge-only\": [\"work-*\"]\n}\n", nil, nil,
			func(t *testing.T, c serveConfig) {
				if c.name != "gw // not a comment" || !reflect.DeepEqual(c.bridgeOnly, []string{"work-*"}) {
					t.Errorf("cfg = %+v", c)
				}
			}, map[string]settings.Source{"name": settings.File}},
		{"remote flags read their GATEWAY_REMOTE_ variables through the same layer",
			`{"remote-token-file": "/x/t", "remote-follow": ["session_a"]}`,
			map[string]string{"GATEWAY_REMOTE_FOLLOW": "session_b,session_c", "GATEWAY_REMOTE_IDLE": "5m"}, nil,
			func(t *testing.T, c serveConfig) {
				if c.remote.tokenFile != "/x/t" || strings.Join(c.remote.follow, ",") != "session_b,session_c" || c.remote.idle != 5*time.Minute {
					t.Errorf("remote = %+v", c.remote)
				}
			}, map[string]settings.Source{"remote-token-file": settings.File, "remote-follow": settings.Env, "remote-idle": settings.Env}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				writeConf(t, dir, "config.json", tt.file, 0o600)
			}
			vars := map[string]string{"GATEWAY_STATE_DIR": dir}
			for k, v := range tt.vars {
				vars[k] = v
			}
			plan, stderr := setup(t, vars, tt.args...)
			if plan == nil {
				t.Fatalf("setup failed: %s", stderr)
			}
			tt.check(t, plan.cfg)
			for key, want := range tt.from {
				if got := sourceOf(t, plan.settings, key); got != want {
					t.Errorf("%s came from %v, want %v", key, got, want)
				}
			}
		})
	}
}

func sourceOf(t *testing.T, st *settings.Settings, key string) settings.Source {
	t.Helper()
	src, ok := st.Source(key)
	if !ok {
		t.Fatalf("no setting %q", key)
	}
	return src
}

func TestConfigFileLocation(t *testing.T) {
	tests := []struct {
		name     string
		where    string // "state-dir", "flag" or "env": where the file is named
		wantName string
	}{
		{"config.json in the state directory is read when nothing names a file", "state-dir", "from-state-dir"},
		{"--config names the file", "flag", "from-flag"},
		{"GATEWAY_CONFIG names the file", "env", "from-env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, other := t.TempDir(), t.TempDir()
			writeConf(t, dir, "config.json", `{"name": "from-state-dir"}`, 0o600)
			vars := map[string]string{"GATEWAY_STATE_DIR": dir}
			var args []string
			switch tt.where {
			case "flag":
				args = []string{"--config", writeConf(t, other, "gw.json", `{"name": "from-flag"}`, 0o644)}
				vars["GATEWAY_CONFIG"] = writeConf(t, other, "env.json", `{"name": "from-env"}`, 0o600)
			case "env":
				vars["GATEWAY_CONFIG"] = writeConf(t, other, "env.json", `{"name": "from-env"}`, 0o600)
			}
			plan, stderr := setup(t, vars, args...)
			if plan == nil {
				t.Fatalf("setup failed: %s", stderr)
			}
			if plan.cfg.name != tt.wantName {
				t.Fatalf("name = %q, want %q", plan.cfg.name, tt.wantName)
			}
		})
	}
}

func TestSecretsFromFiles(t *testing.T) {
	dir := t.TempDir()
	good := writeConf(t, dir, "name", "  from-a-file \n", 0o600)
	hosts := writeConf(t, dir, "hosts", "a.example\nb.example,c.example\n", 0o400)
	readable := writeConf(t, dir, "readable", "x", 0o640)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	big := writeConf(t, dir, "big", strings.Repeat("x", maxSecretFile+1), 0o600)
	tests := []struct {
		name    string
		file    string
		vars    map[string]string
		want    string // the name it reads
		wantErr []string
	}{
		{"GATEWAY_<NAME>_FILE reads the value, trimmed", "", map[string]string{"GATEWAY_NAME_FILE": good}, "from-a-file", nil},
		{"<name>_file in the config file reads the value", `{"name_file": "` + good + `"}`, nil, "from-a-file", nil},
		{"a variable's _FILE beats the file's value", `{"name": "filed"}`, map[string]string{"GATEWAY_NAME_FILE": good}, "from-a-file", nil},
		{"a group-readable secret file is refused", "", map[string]string{"GATEWAY_NAME_FILE": readable},
			"", []string{"GATEWAY_NAME_FILE", readable, "chmod 600"}},
		{"a symlinked secret file is refused", "", map[string]string{"GATEWAY_NAME_FILE": link},
			"", []string{"GATEWAY_NAME_FILE", "symlink"}},
		{"an oversized secret file is refused", "", map[string]string{"GATEWAY_NAME_FILE": big},
			"", []string{"GATEWAY_NAME_FILE", "too large"}},
		{"a missing secret file is refused", `{"name_file": "` + good + `.gone"}`, nil,
			"", []string{`"name_file"`, "config.json:1", "no such file"}},
		{"a value and its _FILE in the environment are refused", "", map[string]string{"GATEWAY_NAME": "x", "GATEWAY_NAME_FILE": good},
			"", []string{"GATEWAY_NAME and GATEWAY_NAME_FILE", "give one"}},
		{"a value and its _file in the config file are refused", `{"name": "x", "name_file": "` + good + `"}`, nil,
			"", []string{`"name"`, "config.json:1", "give one"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sd := t.TempDir()
			if tt.file != "" {
				writeConf(t, sd, "config.json", tt.file, 0o600)
			}
			vars := map[string]string{"GATEWAY_STATE_DIR": sd}
			for k, v := range tt.vars {
				vars[k] = v
			}
			plan, stderr := setup(t, vars)
			if tt.wantErr != nil {
				if plan != nil {
					t.Fatalf("setup succeeded, want an error mentioning %q", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(stderr, w) {
						t.Errorf("stderr %q does not mention %q", stderr, w)
					}
				}
				return
			}
			if plan == nil {
				t.Fatalf("setup failed: %s", stderr)
			}
			if plan.cfg.name != tt.want {
				t.Fatalf("name = %q, want %q", plan.cfg.name, tt.want)
			}
		})
	}
	t.Run("a list read from a file splits on lines and commas", func(t *testing.T) {
		plan, stderr := setup(t, map[string]string{"GATEWAY_STATE_DIR": t.TempDir(), "GATEWAY_ALLOW_HOST_FILE": hosts})
		if plan == nil {
			t.Fatal(stderr)
		}
		if want := []string{"a.example", "b.example", "c.example"}; !reflect.DeepEqual(plan.cfg.hosts, want) {
			t.Fatalf("hosts = %q, want %q", plan.cfg.hosts, want)
		}
	})
	t.Run("a flag named NAME-file keeps GATEWAY_NAME_FILE for itself", func(t *testing.T) {
		plan, stderr := setup(t, map[string]string{"GATEWAY_STATE_DIR": t.TempDir(), "GATEWAY_DID_FILE": dir + "/none.json"})
		if plan != nil || !strings.Contains(stderr, "--did-file") || !strings.Contains(stderr, "came from GATEWAY_DID_FILE") {
			t.Fatalf("want --did-file to read the missing path and say where it came from; stderr %q", stderr)
		}
	})
}

func TestInvalidConfigNamesTheKey(t *testing.T) {
	tests := []struct {
		name string
		file string
		perm os.FileMode
		vars map[string]string
		want []string
	}{
		{"an unknown key", "{\n  \"nmae\": \"x\"\n}", 0o600, nil, []string{`"nmae"`, "config.json:2", "unknown key"}},
		{"a string for a duration's number", `{"settle": 5}`, 0o600, nil, []string{`"settle"`, "config.json:1", "wrong type", "duration"}},
		{"a string for a boolean", `{"bridge": "yes"}`, 0o600, nil, []string{`"bridge"`, "wrong type", "true or false"}},
		{"a string for a list", `{"allow-host": "a.example"}`, 0o600, nil, []string{`"allow-host"`, "an array of strings"}},
		{"a duration that does not parse", `{"settle": "soon"}`, 0o600, nil, []string{`"settle"`, "not a duration"}},
		{"a value only serve's checks refuse", "{\n\"held-expiry\": \"7m\"}", 0o600, nil, []string{"--held-expiry", "config.json:2"}},
		{"a variable that does not parse", "", 0, map[string]string{"GATEWAY_SETTLE": "soon"}, []string{"GATEWAY_SETTLE", `"settle"`, "not a duration"}},
		{"a remote alias that is not ID=NAME", "", 0, map[string]string{"GATEWAY_REMOTE_ALIAS": "nope"}, []string{"GATEWAY_REMOTE_ALIAS", "SESSION_ID=NAME"}},
		{"the config key itself", `{"config": "/etc/x.json"}`, 0o600, nil, []string{`"config"`, "cannot be set"}},
		{"the state dir, which finds the config files", `{"state-dir": "/x"}`, 0o600, nil, []string{`"state-dir"`, "cannot be set", "GATEWAY_STATE_DIR"}},
		{"a key given twice", `{"name": "a", "name": "b"}`, 0o600, nil, []string{"given twice", `"name"`}},
		{"JSON that does not parse", "{\n\"name\": \"a\",,\n}", 0o600, nil, []string{"not valid JSON", "line 2"}},
		{"an unclosed comment", "{} /* and then", 0o600, nil, []string{"not valid JSON", "line 1"}},
		{"a config file others can write", `{"name": "x"}`, 0o666, nil, []string{"config.json", "chmod go-w"}},
		{"a config file that is not an object", `["name"]`, 0o600, nil, []string{"one JSON object"}},
	}
	for _, tt := range tests {
		for _, cmd := range []string{"config", "serve"} {
			t.Run(cmd+" refuses "+tt.name, func(t *testing.T) {
				dir := t.TempDir()
				if tt.file != "" {
					writeConf(t, dir, "config.json", tt.file, tt.perm)
				}
				vars := map[string]string{"GATEWAY_STATE_DIR": dir}
				for k, v := range tt.vars {
					vars[k] = v
				}
				code, stdout, stderr := runGateway(t, vars, cmd, "--legs", "none", "--remote-token-file", "/x/t")
				if code != exitUsage {
					t.Fatalf("exit %d, want %d; stderr %q", code, exitUsage, stderr)
				}
				if stdout != "" {
					t.Errorf("printed a configuration: %q", stdout)
				}
				for _, w := range tt.want {
					if !strings.Contains(stderr, w) {
						t.Errorf("stderr %q does not mention %q", stderr, w)
					}
				}
			})
		}
	}
	t.Run("a --config that does not exist is an error, not an empty file", func(t *testing.T) {
		code, _, stderr := runGateway(t, map[string]string{"GATEWAY_STATE_DIR": t.TempDir()}, "config", "--config", "/nonexistent/gw.json")
		if code != exitUsage || !strings.Contains(stderr, "/nonexistent/gw.json") {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
	})
}

func TestServeWithABadConfigRegistersNothing(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	writeConf(t, state, "config.json", `{"name": "gw", "api-adress": "127.0.0.1:0"}`, 0o600)
	vars := map[string]string{"GATEWAY_STATE_DIR": state, "HOME": root, "CLAUDE_CONFIG_DIR": filepath.Join(root, "claude"),
		"QWEN_HOME": filepath.Join(root, "qwen"), "XDG_RUNTIME_DIR": filepath.Join(root, "run")}
	code, _, stderr := runGateway(t, vars, "serve")
	if code != exitUsage || !strings.Contains(stderr, `"api-adress"`) {
		t.Fatalf("exit %d, stderr %q; want 2 naming the key", code, stderr)
	}
	var made []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != root && p != state && !strings.HasSuffix(p, "config.json") {
			made = append(made, p)
		}
		return nil
	})
	if len(made) > 0 {
		t.Fatalf("serve left %q behind: it started before checking its configuration", made)
	}
}

func TestConfigRedactsSecrets(t *testing.T) {
	dir := t.TempDir()
	const orgSecret, tokenPath, keySecret = "org-from-a-secret-file", "/run/s3cr3t-token-path", "flag-s3cr3t"
	org := writeConf(t, dir, "org", orgSecret+"\n", 0o600)
	writeConf(t, dir, "config.json", `{"remote-token-file": "`+tokenPath+`"}`, 0o600)
	vars := map[string]string{"GATEWAY_STATE_DIR": dir, "GATEWAY_REMOTE_ORG_FILE": org}
	args := []string{"config", "--legs", "none", "--remote-token-url", "https://auth.example/" + keySecret}
	for _, asJSON := range []bool{false, true} {
		name := "the text output never holds a secret"
		a := args
		if asJSON {
			name, a = "the JSON output never holds a secret", append(append([]string{}, args...), "--json")
		}
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runGateway(t, vars, a...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, s := range []string{orgSecret, tokenPath, "s3cr3t"} {
				if strings.Contains(stdout, s) || strings.Contains(stderr, s) {
					t.Errorf("output holds %q:\n%s", s, stdout)
				}
			}
			if !strings.Contains(stdout, "[redacted]") || !strings.Contains(stdout, org) {
				t.Errorf("want [redacted] values and the secret file's path:\n%s", stdout)
			}
		})
	}
	t.Run("a check that quotes a value read from a secret file shows it redacted", func(t *testing.T) {
		mode := writeConf(t, dir, "mode", "hunter2-mode\n", 0o600)
		code, stdout, stderr := runGateway(t, map[string]string{"GATEWAY_STATE_DIR": t.TempDir(), "GATEWAY_MODE_FILE": mode}, "config")
		if code != exitUsage || !strings.Contains(stderr, "--mode") || !strings.Contains(stderr, "GATEWAY_MODE_FILE") {
			t.Fatalf("exit %d, stderr %q; want 2 naming --mode and its variable", code, stderr)
		}
		if strings.Contains(stdout+stderr, "hunter2") {
			t.Fatalf("the secret file's content was printed: %q", stderr)
		}
	})
	t.Run("the JSON output says where every key came from", func(t *testing.T) {
		code, stdout, stderr := runGateway(t, vars, append(args, "--json", "--name", "gw")...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var ents []settings.Entry
		if err := json.Unmarshal([]byte(stdout), &ents); err != nil {
			t.Fatal(err)
		}
		got := map[string]settings.Entry{}
		for _, e := range ents {
			got[e.Key] = e
		}
		want := map[string]settings.Entry{
			"config":            {Value: filepath.Join(dir, "config.json"), Source: "default"},
			"name":              {Value: "gw", Source: "flag"},
			"mode":              {Value: "prompting", Source: "default"},
			"remote-org":        {Value: "[redacted]", Source: "_FILE", Origin: "GATEWAY_REMOTE_ORG_FILE", File: org},
			"remote-token-file": {Value: "[redacted]", Source: "file", Origin: filepath.Join(dir, "config.json") + ":1"},
			"remote-follow":     {Value: []any{}, Source: "default"},
		}
		for k, w := range want {
			g := got[k]
			w.Key = k
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s = %+v, want %+v", k, g, w)
			}
		}
		if _, ok := got["json"]; ok {
			t.Error("config's own --json is listed as a setting")
		}
	})
}

func TestConfigRedactsURLUserinfoAndExecArguments(t *testing.T) {
	vars := map[string]string{"GATEWAY_STATE_DIR": t.TempDir()}
	args := []string{"config", "--remote-url", "https://gw:url-pa55word@claude.example",
		"--remote-signer", "exec:/usr/local/bin/signer --passphrase exec-pa55word"}
	for _, extra := range [][]string{nil, {"--json"}} {
		code, stdout, stderr := runGateway(t, vars, append(append([]string{}, args...), extra...)...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if strings.Contains(stdout+stderr, "pa55word") {
			t.Errorf("config %v prints a password:\n%s", extra, stdout)
		}
		for _, w := range []string{"https://[redacted]@claude.example", "exec:/usr/local/bin/signer [redacted]"} {
			if !strings.Contains(stdout, w) {
				t.Errorf("config %v does not show %q:\n%s", extra, w, stdout)
			}
		}
	}
	t.Run("a check that quotes the URL hides its userinfo", func(t *testing.T) {
		code, stdout, stderr := runGateway(t, vars, "config", "--remote-token-file", "/nonexistent/token", "--remote-url", "https://gw:url-pa55word@claude.example/not-a-base")
		if code != exitUsage || !strings.Contains(stderr, "--remote-url") || strings.Contains(stdout+stderr, "pa55word") {
			t.Fatalf("exit %d, stderr %q; want 2 naming --remote-url without the password", code, stderr)
		}
	})
}

func TestAnUnusableStateDirIsReportedAsItself(t *testing.T) {
	root := t.TempDir()
	file := writeConf(t, root, "not-a-dir", "", 0o600)
	cases := map[string]struct{ dir, problem, fix string }{
		"a file":                   {file, "not a directory", "use another directory"},
		"a path through a file":    {filepath.Join(file, "state"), "not a directory", "use another directory"},
		"another user's directory": {filepath.Join(root, "theirs"), "not owned by this user", "chown it"},
	}
	if err := os.Mkdir(filepath.Join(root, "theirs"), 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(filepath.Join(root, "theirs"), 12345, 12345); err != nil {
			t.Fatal(err)
		}
	} else {
		delete(cases, "another user's directory") // only root can give a directory away
	}
	for name, c := range cases {
		for _, cmd := range []string{"config", "serve"} {
			t.Run(cmd+" with "+name, func(t *testing.T) {
				code, _, stderr := runGateway(t, map[string]string{"GATEWAY_STATE_DIR": c.dir}, cmd, "--legs", "claude")
				if code != exitUsage || strings.Contains(stderr, "config file") {
					t.Fatalf("exit %d, stderr %q; want 2 about the state directory, not its config file", code, stderr)
				}
				for _, w := range []string{"state directory", "--state-dir", c.dir, c.problem, c.fix} {
					if !strings.Contains(stderr, w) {
						t.Errorf("stderr %q does not say %q", stderr, w)
					}
				}
			})
		}
	}
}

func TestConfigHelpDocumentsPrecedence(t *testing.T) {
	for _, cmd := range []string{"config", "serve"} {
		t.Run(cmd+" -h explains the layers and lists every variable", func(t *testing.T) {
			code, stderr, _ := runGateway(t, map[string]string{"GATEWAY_STATE_DIR": t.TempDir()}, cmd, "-h")
			if code != exitOK {
				t.Fatalf("exit %d", code)
			}
			for _, w := range []string{"default < the config file < its environment variable < the command line", "_FILE", "GATEWAY_SETTLE", "GATEWAY_REMOTE_ORG"} {
				if !strings.Contains(stderr, w) {
					t.Errorf("help does not mention %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestConfigShowsNotifyTargetsAsSchemeAndHost(t *testing.T) {
	const targets = "ntfy://ntfy.sh/approve-topic-s3cr3t,https://hooks.slack.com/services/T0/B0/hook-s3cr3t"
	for _, how := range []struct {
		name string
		vars map[string]string
		args []string
	}{
		{"on the command line", map[string]string{}, []string{"--notify", targets}},
		{"in GATEWAY_NOTIFY", map[string]string{"GATEWAY_NOTIFY": targets}, nil},
		{"quoted by a check", map[string]string{}, []string{"--notify", "https://hooks.slack.com/services/T0/B0/hook-s3cr3t,ntfy://ntfy.sh/a/topic-s3cr3t"}},
	} {
		t.Run(how.name, func(t *testing.T) {
			how.vars["GATEWAY_STATE_DIR"] = t.TempDir()
			for _, extra := range []string{"--json=false", "--json"} {
				code, stdout, stderr := runGateway(t, how.vars, append([]string{"config", extra}, how.args...)...)
				if strings.Contains(stdout+stderr, "topic-s3cr3t") || strings.Contains(stdout+stderr, "hook-s3cr3t") {
					t.Errorf("config %s prints a notify secret:\n%s%s", extra, stdout, stderr)
				}
				if !strings.Contains(stdout+stderr, "ntfy://ntfy.sh") || (code == exitOK) == strings.Contains(how.name, "check") {
					t.Errorf("config %s: exit %d, does not say where it notifies:\n%s%s", extra, code, stdout, stderr)
				}
			}
		})
	}
}

func TestServeRefusesAStrayArgument(t *testing.T) {
	e := &env{stdout: new(syncBuffer), stderr: new(syncBuffer), getenv: func(k string) string {
		if k == "HOME" {
			return t.TempDir()
		}
		return ""
	}}
	load := serveFlags(e, newFlags(e, "serve"), nil)
	if _, err := load([]string{"--state-dir", t.TempDir(), "--legs", "claude", "--federation-no-auth", "false"}); err == nil {
		t.Fatal("a stray argument was accepted (no-auth is now on)")
	}
}

// A remote leg's signer is built at the start: a bad key or a command that
// cannot run is a usage error then (exit 2), not a failed post later.
func TestServeRefusesARemoteSignerItCannotBuild(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	writeConf(t, dir, "token", `{"access_token": "x"}`, 0o600)
	writeConf(t, dir, "key", "not a key", 0o600)
	for _, tt := range []struct{ signer, want string }{
		{"ed25519-file:" + filepath.Join(dir, "key"), "--remote-signer"},
		{"exec:/nonexistent/signer", `cannot run "/nonexistent/signer"`},
		{"hsm", "want none, ed25519-file:PATH or exec:COMMAND"},
	} {
		t.Run(tt.signer, func(t *testing.T) {
			code, _, stderr := runGateway(t, map[string]string{"GATEWAY_STATE_DIR": t.TempDir()},
				"serve", "--legs", "claude", "--remote-token-file", tok, "--remote-signer", tt.signer)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want %d saying %q", code, stderr, exitUsage, tt.want)
			}
		})
	}
}

func TestServeAndConfigSayABooleanTakesItsValueAfterEquals(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--bridge", "false"}, "did you mean --bridge=false?"},
		{[]string{"--require-auth", "false", "--legs", "claude"}, "did you mean --require-auth=false?"},
		{[]string{"--legs", "claude", "--federation-no-auth", "false"}, "did you mean --federation-no-auth=false?"},
		{[]string{"-bridge", "0"}, "did you mean --bridge=0?"},
		{[]string{"--legs", "claude", "extra"}, `takes no arguments, not "extra"`},
		{[]string{"--legs", "claude", "--", "--bridge"}, `takes no arguments, not "--bridge"`},
	}
	for _, tt := range tests {
		for _, cmd := range []string{"config", "serve"} {
			t.Run(cmd+" "+strings.Join(tt.args, " "), func(t *testing.T) {
				code, stdout, stderr := runGateway(t, map[string]string{"GATEWAY_STATE_DIR": t.TempDir()}, append([]string{cmd}, tt.args...)...)
				if code != exitUsage || stdout != "" {
					t.Fatalf("exit %d, stdout %q; want %d and nothing printed", code, stdout, exitUsage)
				}
				if lines := strings.Split(strings.TrimSpace(stderr), "\n"); !strings.Contains(lines[0], tt.want) || len(lines) != 3 {
					t.Errorf("stderr %q: want 3 lines, the first saying %q", stderr, tt.want)
				}
			})
		}
	}
}

func TestTheUserConfigFileCannotSetTheStateDir(t *testing.T) {
	cfg := t.TempDir()
	if err := os.Mkdir(filepath.Join(cfg, "gateway"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeConf(t, filepath.Join(cfg, "gateway"), "config.json", `{"state-dir": "/X"}`, 0o600)
	code, stdout, stderr := runGateway(t, map[string]string{"XDG_CONFIG_HOME": cfg, "GATEWAY_STATE_DIR": t.TempDir()}, "config", "--legs", "claude")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, `"state-dir": cannot be set in the config file`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestServeErrorsNeverShowAFederationPassword(t *testing.T) {
	code, stdout, stderr := runGateway(t, map[string]string{"GATEWAY_STATE_DIR": t.TempDir()},
		"serve", "--legs", "none", "--federation", "nats://u:p1secret@127.0.0.1:1,nats://u2:pw2secret@[::1")
	if code == exitOK || strings.Contains(stdout+stderr, "secret") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestReloadKeepsACommandLineLevelAndReadsTheFile(t *testing.T) {
	dir := t.TempDir()
	plan, errs := setup(t, map[string]string{"GATEWAY_STATE_DIR": dir, "GATEWAY_LOG_LEVEL": "error"}, "--legs", "claude", "--log-level", "debug")
	if plan == nil {
		t.Fatal(errs)
	}
	if _, kept, _ := plan.cfg.life.level(); kept == "" {
		t.Error("a reload replaced the command line's --log-level")
	}
	writeConf(t, dir, "config.json", `{"log-level": "warn"}`, 0o600)
	plan, errs = setup(t, map[string]string{"GATEWAY_STATE_DIR": dir}, "--legs", "claude")
	if plan == nil {
		t.Fatal(errs)
	}
	writeConf(t, dir, "config.json", `{"log-level": "error"}`, 0o600)
	if l, kept, err := plan.cfg.life.level(); kept != "" || err != nil || l != slog.LevelError {
		t.Errorf("reload = %v, %q, %v; want the file's new level error", l, kept, err)
	}
}
