package claude

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tailscale/hujson"

	"github.com/sessiongateway/gateway/internal/safefile"
)

var testHookCmd = HookCommand{Program: "/opt/gw/bin/gateway"}

// A settings file as Claude Code writes it: two-space JSON, with a hook of
// the user's own and other keys.
const userSettings = `{
  "permissions": {
    "allow": [
      "Bash(npm test:*)"
    ]
  },
  "hooks": {
    "PermissionRequest": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "/home/me/bin/log-prompt"
          }
        ]
      }
    ]
  },
  "model": "opus"
}
`

func writeSettings(t *testing.T, body string, mode fs.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hooksOf decodes the settings file's hooks.
func hooksOf(t *testing.T, p string) map[string][]rawGroup {
	t.Helper()
	var s struct {
		Hooks map[string][]rawGroup `json:"hooks"`
	}
	std, err := hujson.Standardize([]byte(readFile(t, p)))
	if err != nil {
		t.Fatalf("settings no longer JSON with comments: %v", err)
	}
	if err := json.Unmarshal(std, &s); err != nil {
		t.Fatalf("settings no longer JSON: %v", err)
	}
	return s.Hooks
}

func TestInstallHooksMergesTheGatewaysHooksAndKeepsTheRest(t *testing.T) {
	p := writeSettings(t, userSettings, 0o644)
	rep, err := InstallHooks(p, testHookCmd)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Changed || rep.Backup != p+BackupSuffix {
		t.Fatalf("report %+v: want changed with a backup", rep)
	}
	if got := readFile(t, rep.Backup); got != userSettings {
		t.Fatalf("backup holds %q, want the file as it was", got)
	}
	for path, want := range map[string]fs.FileMode{p: 0o644, rep.Backup: 0o600} {
		if fi, _ := os.Stat(path); fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", filepath.Base(path), fi.Mode().Perm(), want)
		}
	}
	var all map[string]json.RawMessage
	_ = json.Unmarshal([]byte(readFile(t, p)), &all)
	if string(all["model"]) != `"opus"` || !strings.Contains(string(all["permissions"]), "npm test") {
		t.Fatalf("other keys lost: %s", readFile(t, p))
	}
	hooks := hooksOf(t, p)
	if pr := hooks[HookPermissionRequest]; len(pr) != 2 || pr[0].Hooks[0].Command != "/home/me/bin/log-prompt" {
		t.Fatalf("the user's own PermissionRequest hook must stay first: %+v", pr)
	}
	for _, ev := range HookEvents {
		g := hooks[ev][len(hooks[ev])-1]
		if g.Hooks[0].Command != "/opt/gw/bin/gateway hook "+ev || g.Hooks[0].Type != "command" {
			t.Errorf("%s: installed %+v", ev, g.Hooks)
		}
	}
	if *hooks[HookPermissionRequest][1].Matcher != "*" || *hooks[HookPermissionRequest][1].Hooks[0].Timeout != permissionHookTimeout {
		t.Errorf("a PermissionRequest hook must match every tool and wait as long as the user may be away: %+v", hooks[HookPermissionRequest][1])
	}
	for _, e := range rep.Events {
		if !e.Installed || !e.Current {
			t.Errorf("report says %+v after install", e)
		}
	}
}

func TestInstallThenUninstallGivesBackTheSameBytes(t *testing.T) {
	files := map[string]string{
		"Claude Code's own layout": userSettings,
		"no hooks at all":          "{\n  \"model\": \"opus\"\n}\n",
		"four spaces, no newline":  "{\n    \"model\": \"opus\",\n    \"hooks\": {\n        \"Stop\": [\n            {\n                \"hooks\": [\n                    {\n                        \"type\": \"command\",\n                        \"command\": \"true\"\n                    }\n                ]\n            }\n        ]\n    }\n}",
		"comments":                 "{\n  // mine\n  \"model\": \"opus\" /* keep */\n}\n",
		"an empty file":            "",
	}
	for name, body := range files {
		t.Run(name, func(t *testing.T) {
			p := writeSettings(t, body, 0o600)
			if _, err := InstallHooks(p, testHookCmd); err != nil {
				t.Fatal(err)
			}
			if len(hooksOf(t, p)[HookPermissionRequest]) == 0 {
				t.Fatalf("no hook in %s", readFile(t, p))
			}
			rep, err := UninstallHooks(p, testHookCmd)
			if err != nil || !rep.Changed {
				t.Fatalf("uninstall: %+v, %v", rep, err)
			}
			if got := readFile(t, p); got != body && !(body == "" && got == "{}\n") {
				t.Fatalf("after install and uninstall:\n%s\nwant:\n%s", got, body)
			}
		})
	}
}

func TestInstallAndUninstallAreIdempotent(t *testing.T) {
	p := writeSettings(t, userSettings, 0o600)
	if _, err := InstallHooks(p, testHookCmd); err != nil {
		t.Fatal(err)
	}
	once := readFile(t, p)
	rep, err := InstallHooks(p, testHookCmd)
	if err != nil || rep.Changed || readFile(t, p) != once {
		t.Fatalf("a second install changed the file: %+v, %v", rep, err)
	}
	if _, err := UninstallHooks(p, testHookCmd); err != nil {
		t.Fatal(err)
	}
	rep, err = UninstallHooks(p, testHookCmd)
	if err != nil || rep.Changed || readFile(t, p) != userSettings {
		t.Fatalf("a second uninstall changed the file: %+v, %v", rep, err)
	}
	missing := filepath.Join(t.TempDir(), "none.json")
	if rep, err := UninstallHooks(missing, testHookCmd); err != nil || rep.Changed {
		t.Fatalf("uninstall from a missing file: %+v, %v", rep, err)
	}
	if _, err := os.Lstat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("uninstall created a settings file")
	}
}

func TestInstallReplacesAnotherGatewaysHooksRatherThanDoublingThem(t *testing.T) {
	p := writeSettings(t, userSettings, 0o600)
	if _, err := InstallHooks(p, HookCommand{Program: "/old place/gateway"}); err != nil {
		t.Fatal(err)
	}
	if st, _ := HooksStatus(p, testHookCmd); st.Events[0].Current || !st.Events[0].Installed {
		t.Fatalf("status of another binary's hooks: %+v", st.Events[0])
	}
	cmd := HookCommand{Program: "/opt/gw/bin/gateway", StateDir: "/srv/gw state"}
	if _, err := InstallHooks(p, cmd); err != nil {
		t.Fatal(err)
	}
	hooks := hooksOf(t, p)
	for _, ev := range HookEvents {
		var ours []string
		for _, g := range hooks[ev] {
			for _, h := range g.Hooks {
				if isGatewayHook(h.Command, ev, "") {
					ours = append(ours, h.Command)
				}
			}
		}
		if want := []string{"/opt/gw/bin/gateway hook " + ev + " --state-dir '/srv/gw state'"}; !slices.Equal(ours, want) {
			t.Errorf("%s: gateway hooks %q, want %q", ev, ours, want)
		}
	}
}

func TestUninstallTakesOnlyTheGatewaysHookOutOfAMixedGroup(t *testing.T) {
	body := `{
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send done"
          },
          {
            "type": "command",
            "command": "/usr/bin/gateway hook Stop",
            "timeout": 10
          }
        ]
      }
    ]
  }
}
`
	p := writeSettings(t, body, 0o600)
	if _, err := UninstallHooks(p, testHookCmd); err != nil {
		t.Fatal(err)
	}
	stop := hooksOf(t, p)[HookStop]
	if len(stop) != 1 || len(stop[0].Hooks) != 1 || stop[0].Hooks[0].Command != "notify-send done" {
		t.Fatalf("Stop hooks after uninstall: %+v", stop)
	}
}

func TestInstallCreatesAMissingSettingsFilePrivately(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cfg", ".claude", "settings.json")
	rep, err := InstallHooks(p, testHookCmd)
	if err != nil || !rep.Changed || rep.Backup != "" {
		t.Fatalf("install into a new file: %+v, %v", rep, err)
	}
	for path, want := range map[string]fs.FileMode{p: 0o600, filepath.Dir(p): fs.ModeDir | 0o700} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v, %v; want %v", path, fi.Mode(), err, want)
		}
	}
	if len(hooksOf(t, p)) != len(HookEvents) {
		t.Fatalf("new file: %s", readFile(t, p))
	}
}

func TestInstallRefusesAFileItMustNotWrite(t *testing.T) {
	cases := map[string]func(t *testing.T) string{
		"a symlink": func(t *testing.T) string {
			target := writeSettings(t, userSettings, 0o600)
			link := filepath.Join(t.TempDir(), "settings.json")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			return link
		},
		"hooks that are not an object": func(t *testing.T) string {
			return writeSettings(t, `{"hooks": ["x"]}`, 0o600)
		},
		"an event that is not a list": func(t *testing.T) string {
			return writeSettings(t, `{"hooks": {"Stop": {"x": 1}}}`, 0o600)
		},
		"not JSON": func(t *testing.T) string { return writeSettings(t, `{"a": `, 0o600) },
		"a list":   func(t *testing.T) string { return writeSettings(t, `[]`, 0o600) },
	}
	if os.Geteuid() == 0 {
		cases["another user's file"] = func(t *testing.T) string {
			p := writeSettings(t, userSettings, 0o644)
			if err := os.Chown(p, 12345, 12345); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	for name, make := range cases {
		t.Run(name, func(t *testing.T) {
			p := make(t)
			before, _ := os.ReadFile(p)
			for op, run := range map[string]func() (HooksReport, error){
				"install":   func() (HooksReport, error) { return InstallHooks(p, testHookCmd) },
				"uninstall": func() (HooksReport, error) { return UninstallHooks(p, testHookCmd) },
			} {
				if rep, err := run(); err == nil {
					t.Errorf("%s: no error, report %+v", op, rep)
				}
			}
			if after, _ := os.ReadFile(p); string(after) != string(before) {
				t.Fatalf("refused file changed: %q", after)
			}
			if _, err := os.Lstat(p + BackupSuffix); !errors.Is(err, fs.ErrNotExist) {
				t.Fatal("a refused file got a backup")
			}
		})
	}
	t.Run("a settings directory others may write", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "settings.json")
		if err := os.WriteFile(p, []byte(userSettings), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := InstallHooks(p, testHookCmd); !errors.Is(err, safefile.ErrLooseMode) {
			t.Fatalf("install in a 0777 directory: %v", err)
		}
	})
}

func TestAGatewayHookIsKnownByItsCommand(t *testing.T) {
	cases := []struct {
		command, event string
		ours           bool
	}{
		{"/tmp/gw hook Stop", HookStop, true}, // this gateway's program, whatever its name
		{"/tmp/other hook Stop", HookStop, false},
		{"/usr/bin/gateway hook Stop", HookStop, true},
		{"'/home/me/my tools/gateway' hook Stop --state-dir '/x y'", HookStop, true},
		{`"/opt/gateway.new" hook Notification`, HookNotification, true},
		{"gateway hook PermissionRequest", HookPermissionRequest, true},
		{"/usr/bin/gateway hook Stop", HookNotification, false},
		{"/usr/bin/gateway status", HookStop, false},
		{"/usr/bin/notify hook Stop", HookStop, false},
		{"gateway hook Stop; rm -rf ~", HookStop, false},
		{`"$HOME/gateway" hook Stop`, HookStop, false},
		{"'unterminated hook Stop", HookStop, false},
	}
	for _, c := range cases {
		if got := isGatewayHook(c.command, c.event, "/tmp/gw"); got != c.ours {
			t.Errorf("isGatewayHook(%q, %s) = %v, want %v", c.command, c.event, got, c.ours)
		}
	}
}

func TestAHookCommandSurvivesTheShell(t *testing.T) {
	for _, prog := range []string{"/usr/bin/gateway", "/home/o'brien/gateway", "/a b/$x/gateway", "/tmp/gw;rm/gateway"} {
		cmd := HookCommand{Program: prog, StateDir: "/state dir/it's"}.For(HookStop)
		w, ok := shellWords(cmd)
		if !ok || !slices.Equal(w, []string{prog, "hook", HookStop, "--state-dir", "/state dir/it's"}) {
			t.Errorf("%q split into %q (%v)", cmd, w, ok)
		}
	}
}
