package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/tailscale/hujson"

	"github.com/sessiongateway/gateway/internal/safefile"
)

// `gateway hooks install` merges the gateway's hooks into a Claude Code
// settings file, and uninstall takes exactly those out again. The file is
// the user's: every other key, hook, comment and its mode are kept; a
// standard JSON file keeps its indentation, so install then uninstall gives
// back the same bytes. Which hooks are the gateway's is read off their
// command ("<gateway> hook EVENT"), so an install by another gateway binary
// or with another state directory is recognized and replaced, not doubled.

// Hook timeouts install writes, in seconds as Claude Code counts them. A
// PermissionRequest hook may wait as long as the user is away (the
// endpoint's DefaultMaxHookWait); the others only hand a line over.
const (
	permissionHookTimeout = 86400
	eventHookTimeout      = 10
	maxSettingsFile       = 4 << 20
)

// BackupSuffix names the copy of a settings file taken before a change.
const BackupSuffix = ".gateway-backup"

// HookCommand is what an installed hook runs: Program (the gateway binary)
// `hook EVENT --state-dir StateDir`.
type HookCommand struct {
	Program  string
	StateDir string // "": the hook's own default
}

// NewHookCommand is the command hooks run: program (default ThisProgram)
// with stateDir made absolute. The state directory is always named: Claude
// Code may start from an environment (an IDE, a desktop) without the
// shell's GATEWAY_STATE_DIR.
func NewHookCommand(program, stateDir string) (HookCommand, error) {
	if program == "" {
		program = ThisProgram()
	}
	dir, err := filepath.Abs(stateDir)
	return HookCommand{Program: program, StateDir: dir}, err
}

// For is the command line of the hook for event, quoted for /bin/sh, which
// Claude Code runs it with.
func (c HookCommand) For(event string) string {
	s := shellQuote(c.Program) + " hook " + event
	if c.StateDir != "" {
		s += " --state-dir " + shellQuote(c.StateDir)
	}
	return s
}

// HooksReport is what install, uninstall and status found and did.
type HooksReport struct {
	Settings string            `json:"settings"`
	Changed  bool              `json:"changed"`
	Backup   string            `json:"backup,omitempty"` // the copy taken before the change
	Events   []HookEventStatus `json:"events"`
	// Endpoint and Listening (status only): the gateway's hook socket, and
	// whether a gateway answers there; without one the hooks decide
	// nothing and the terminal asks.
	Endpoint  string `json:"endpoint,omitempty"`
	Listening bool   `json:"listening"`
}

// HookEventStatus is one event's hook in the settings file.
type HookEventStatus struct {
	Event     string `json:"event"`
	Installed bool   `json:"installed"`
	Command   string `json:"command,omitempty"`
	// Current: the installed command is the one install would write now
	// (this binary, this state directory, this timeout).
	Current bool `json:"current"`
}

// Settings file errors.
var (
	ErrSettingsShape = errors.New("settings file has an unexpected shape")
	ErrSettingsOwner = errors.New("settings file belongs to another user")
)

// UserSettings is the user's Claude Code settings file.
func UserSettings() (string, error) {
	dir, err := ConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "settings.json"), nil
}

// ProjectSettings is a project's local settings file: Claude Code keeps it
// out of git, so the gateway's absolute path is not committed for others.
func ProjectSettings(dir string) string {
	return filepath.Join(dir, ".claude", "settings.local.json")
}

// HookSettingsPath is the settings file `gateway hooks` edits: settings
// when given, a project's local settings with project, else the user's.
func HookSettingsPath(settings, project string) (string, error) {
	switch {
	case settings != "":
		return filepath.Abs(settings)
	case project != "":
		dir, err := filepath.Abs(project)
		return ProjectSettings(dir), err
	}
	return UserSettings()
}

// ThisProgram is the path hooks should run this binary by: the one on
// PATH when that is this binary (a stable name across upgrades), else its
// own.
func ThisProgram() string {
	self, err := os.Executable()
	if err != nil {
		return "gateway"
	}
	if p, err := exec.LookPath(filepath.Base(os.Args[0])); err == nil && filepath.IsAbs(p) {
		a, aerr := os.Stat(p)
		b, berr := os.Stat(self)
		if aerr == nil && berr == nil && os.SameFile(a, b) {
			return p
		}
	}
	return self
}

// InstallHooks makes the gateway's hooks for HookEvents the ones in the
// settings file at path (creating it, 0600, when missing), replacing any
// other gateway's.
func InstallHooks(path string, cmd HookCommand) (HooksReport, error) {
	return editHooks(path, func(s *settingsFile) {
		for _, ev := range HookEvents {
			want := hookGroup(ev, cmd.For(ev))
			got := s.ours(ev)
			if len(got) == 1 && s.groupIs(ev, got[0], want) {
				continue
			}
			s.removeOurs(ev)
			s.appendGroup(ev, want)
		}
	}, cmd)
}

// UninstallHooks takes the gateway's hooks out of the settings file, with
// what install created around them (an event's list, the hooks object)
// once empty. (An empty list the user had before is taken too: it meant
// nothing to Claude Code.) The hooks of any gateway binary are taken, and
// those of cmd.Program whatever its name. A missing file is nothing to do.
func UninstallHooks(path string, cmd HookCommand) (HooksReport, error) {
	return editHooks(path, func(s *settingsFile) {
		for _, ev := range s.eventNames() {
			s.removeOurs(ev)
		}
	}, cmd)
}

// HooksStatus reads which of the gateway's hooks the settings file has.
func HooksStatus(path string, cmd HookCommand) (HooksReport, error) {
	s, _, err := readSettings(path, cmd.Program)
	if err != nil {
		return HooksReport{Settings: path}, err
	}
	return s.report(path, cmd), nil
}

func editHooks(path string, edit func(*settingsFile), cmd HookCommand) (HooksReport, error) {
	rep := HooksReport{Settings: path}
	s, mode, err := readSettings(path, cmd.Program)
	if err != nil {
		return rep, err
	}
	edit(s)
	if len(s.ops) == 0 {
		return s.report(path, cmd), nil
	}
	out, err := s.render()
	if err != nil {
		return rep, err
	}
	if s.exists {
		rep.Backup = path + BackupSuffix
		if err := safefile.WriteShared(rep.Backup, s.orig); err != nil {
			return rep, fmt.Errorf("backup: %w", err)
		}
	} else if err := safefile.EnsureSharedDir(filepath.Dir(path)); err != nil {
		return rep, err
	}
	if err := safefile.ReplaceShared(path, out, mode); err != nil {
		return rep, err
	}
	done, _, err := readSettings(path, cmd.Program)
	if err != nil {
		return rep, err
	}
	r := done.report(path, cmd)
	r.Changed, r.Backup = true, rep.Backup
	return r, nil
}

// settingsFile is a parsed settings file and the edits made to it, kept as
// JSON Patch operations so that everything else in it stays as written.
type settingsFile struct {
	orig     []byte
	exists   bool
	value    hujson.Value
	hooks    map[string][]rawGroup // event -> its matcher groups, in file order
	events   []string              // events in file order
	hasHooks bool                  // the file has a hooks object (as edited so far)
	program  string                // this gateway's binary: its hooks are ours whatever it is named
	ops      []patchOp
}

type rawGroup struct {
	Matcher *string   `json:"matcher,omitempty"`
	Hooks   []hookDef `json:"hooks"`
}

type hookDef struct {
	Type    string   `json:"type"`
	Command string   `json:"command,omitempty"`
	Timeout *float64 `json:"timeout,omitempty"`
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

func readSettings(path, program string) (*settingsFile, fs.FileMode, error) {
	s := &settingsFile{hooks: map[string][]rawGroup{}, program: program}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.value, _ = hujson.Parse([]byte("{}\n"))
		s.orig = []byte("{}\n")
		return s, 0o600, nil
	case err != nil:
		return nil, 0, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, 0, fmt.Errorf("%s: %w (owner uid %d)", path, ErrSettingsOwner, st.Uid)
	}
	b, err := safefile.ReadCapped(path, maxSettingsFile)
	if err != nil {
		return nil, 0, err
	}
	s.orig, s.exists = b, true
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}\n")
	}
	if s.value, err = hujson.Parse(b); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	if err := s.decode(path); err != nil {
		return nil, 0, err
	}
	return s, fi.Mode().Perm(), nil
}

// decode reads the hooks object, refusing a shape Claude Code would not
// take rather than writing over it.
func (s *settingsFile) decode(path string) error {
	std := s.value.Clone()
	std.Standardize()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(std.Pack(), &top); err != nil || top == nil {
		return fmt.Errorf("%s: %w: not a JSON object", path, ErrSettingsShape)
	}
	raw, ok := top["hooks"]
	if !ok {
		return nil
	}
	s.hasHooks = true
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("%s: %w: hooks is not an object", path, ErrSettingsShape)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%s: %w: %v", path, ErrSettingsShape, err)
		}
		ev := tok.(string)
		var groups []rawGroup
		if err := dec.Decode(&groups); err != nil {
			return fmt.Errorf("%s: %w: hooks.%s is not a list of matcher groups", path, ErrSettingsShape, ev)
		}
		s.events = append(s.events, ev)
		s.hooks[ev] = groups
	}
	return nil
}

func (s *settingsFile) eventNames() []string { return slices.Clone(s.events) }

// ours are the indexes of ev's groups holding a gateway hook of ev.
func (s *settingsFile) ours(ev string) []int {
	var idx []int
	for i, g := range s.hooks[ev] {
		if slices.ContainsFunc(g.Hooks, func(h hookDef) bool { return s.isOurs(h.Command, ev) }) {
			idx = append(idx, i)
		}
	}
	return idx
}

func (s *settingsFile) groupIs(ev string, i int, want rawGroup) bool {
	a, _ := json.Marshal(s.hooks[ev][i])
	b, _ := json.Marshal(want)
	return bytes.Equal(a, b)
}

// removeOurs takes out the gateway's hooks of ev: a group holding only
// gateway hooks goes whole, another group loses just those hooks; an event
// left with no groups goes, and so does a hooks object left empty.
func (s *settingsFile) removeOurs(ev string) {
	groups := s.hooks[ev]
	for _, i := range slices.Backward(s.ours(ev)) {
		g := groups[i]
		kept := slices.DeleteFunc(slices.Clone(g.Hooks), func(h hookDef) bool { return s.isOurs(h.Command, ev) })
		if len(kept) > 0 {
			for j := len(g.Hooks) - 1; j >= 0; j-- {
				if s.isOurs(g.Hooks[j].Command, ev) {
					s.op("remove", fmt.Sprintf("/hooks/%s/%d/hooks/%d", pointerKey(ev), i, j), nil)
				}
			}
			groups[i].Hooks = kept
			continue
		}
		s.op("remove", fmt.Sprintf("/hooks/%s/%d", pointerKey(ev), i), nil)
		groups = slices.Delete(groups, i, i+1)
	}
	s.hooks[ev] = groups
	if len(groups) == 0 && slices.Contains(s.events, ev) {
		s.op("remove", "/hooks/"+pointerKey(ev), nil)
		delete(s.hooks, ev)
		s.events = slices.DeleteFunc(s.events, func(e string) bool { return e == ev })
		if len(s.events) == 0 {
			s.op("remove", "/hooks", nil)
			s.hasHooks = false
		}
	}
}

func (s *settingsFile) appendGroup(ev string, g rawGroup) {
	if !slices.Contains(s.events, ev) {
		if !s.hasHooks {
			s.op("add", "/hooks", map[string]any{})
			s.hasHooks = true
		}
		s.op("add", "/hooks/"+pointerKey(ev), []rawGroup{g})
		s.events = append(s.events, ev)
		s.hooks[ev] = []rawGroup{g}
		return
	}
	s.op("add", "/hooks/"+pointerKey(ev)+"/-", g)
	s.hooks[ev] = append(s.hooks[ev], g)
}

func (s *settingsFile) op(op, path string, value any) {
	s.ops = append(s.ops, patchOp{Op: op, Path: path, Value: value})
}

// render applies the edits. A standard JSON file is laid out again with
// its own indentation (Claude Code writes two spaces), which leaves every
// untouched line as it was; a file with comments keeps its bytes outside
// the edits.
func (s *settingsFile) render() ([]byte, error) {
	v := s.value.Clone()
	patch, err := json.Marshal(s.ops)
	if err != nil {
		return nil, err
	}
	if err := v.Patch(patch); err != nil {
		return nil, fmt.Errorf("editing the settings: %w", err)
	}
	if !s.value.IsStandard() {
		return v.Pack(), nil
	}
	var compact, out bytes.Buffer
	if err := json.Compact(&compact, v.Pack()); err != nil {
		return nil, err
	}
	if err := json.Indent(&out, compact.Bytes(), "", indentOf(s.orig)); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(s.orig)) == 0 || bytes.HasSuffix(s.orig, []byte("\n")) {
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

func (s *settingsFile) report(path string, cmd HookCommand) HooksReport {
	r := HooksReport{Settings: path, Events: []HookEventStatus{}}
	for _, ev := range HookEvents {
		st := HookEventStatus{Event: ev}
		for _, i := range s.ours(ev) {
			for _, h := range s.hooks[ev][i].Hooks {
				if s.isOurs(h.Command, ev) && st.Command == "" {
					st.Installed, st.Command = true, h.Command
				}
			}
		}
		if got := s.ours(ev); len(got) == 1 && cmd.Program != "" {
			st.Current = s.groupIs(ev, got[0], hookGroup(ev, cmd.For(ev)))
		}
		r.Events = append(r.Events, st)
	}
	return r
}

// hookGroup is the matcher group install writes for ev: every tool for
// the tool events, every notification and stop otherwise.
func hookGroup(ev, command string) rawGroup {
	timeout := float64(eventHookTimeout)
	g := rawGroup{}
	all := "*"
	switch ev {
	case HookPermissionRequest:
		timeout = permissionHookTimeout
		g.Matcher = &all
	case HookPostToolUse, HookPostToolUseFailure:
		g.Matcher = &all
	}
	g.Hooks = []hookDef{{Type: "command", Command: command, Timeout: &timeout}}
	return g
}

func (s *settingsFile) isOurs(command, ev string) bool { return isGatewayHook(command, ev, s.program) }

// isGatewayHook says whether command runs a gateway's `hook EVENT`: its
// program is named gateway (any directory, any suffix such as gateway.new)
// or is program, and its next words are "hook" and ev.
func isGatewayHook(command, ev, program string) bool {
	w, ok := shellWords(command)
	return ok && len(w) >= 3 && (strings.HasPrefix(filepath.Base(w[0]), "gateway") || w[0] == program) && w[1] == "hook" && w[2] == ev
}

// indentOf is the indentation of a JSON file's first indented line; two
// spaces when it has none.
func indentOf(b []byte) string {
	for line := range bytes.Lines(b) {
		trimmed := bytes.TrimLeft(line, " \t")
		if n := len(line) - len(trimmed); n > 0 && len(bytes.TrimSpace(trimmed)) > 0 {
			return string(line[:n])
		}
	}
	return "  "
}

func pointerKey(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

// shellQuote quotes s for /bin/sh when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:@,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellWords splits what shellQuote and a person typing a plain command
// write: words separated by blanks, single- and double-quoted parts, and
// backslash escapes. Anything fancier (variables, pipes) is not ours: ok is
// false.
func shellWords(s string) (words []string, ok bool) {
	var (
		cur    strings.Builder
		inWord bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, false
			}
			cur.WriteString(s[i+1 : i+1+end])
			i, inWord = i+1+end, true
		case c == '"':
			end := strings.IndexByte(s[i+1:], '"')
			if end < 0 || strings.ContainsAny(s[i+1:i+1+end], "$`\\") {
				return nil, false
			}
			cur.WriteString(s[i+1 : i+1+end])
			i, inWord = i+1+end, true
		case c == '\\' && i+1 < len(s):
			cur.WriteByte(s[i+1])
			i, inWord = i+1, true
		case strings.IndexByte("$`|&;<>()*?[#~\n", c) >= 0:
			return nil, false
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, true
}

// WriteText prints the report for a person; verb is what was done
// (install, uninstall, status).
func (r HooksReport) WriteText(w io.Writer, verb string) {
	var on []string
	for _, e := range r.Events {
		if e.Installed {
			on = append(on, e.Event)
		}
	}
	switch {
	case verb == "status":
		for _, e := range r.Events {
			state := "not installed"
			switch {
			case e.Installed && e.Current:
				state = "installed"
			case e.Installed:
				state = "installed, another gateway's command (hooks install replaces it)"
			}
			fmt.Fprintf(w, "%-18s %s", e.Event, state)
			if e.Command != "" {
				fmt.Fprintf(w, ": %s", e.Command)
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "settings: %s\n", r.Settings)
		if r.Listening {
			fmt.Fprintf(w, "gateway: listening at %s\n", r.Endpoint)
		} else {
			fmt.Fprintf(w, "gateway: not running at %s: prompts stay at their terminals (gateway serve)\n", r.Endpoint)
		}
	case !r.Changed && verb == "install":
		fmt.Fprintf(w, "already installed in %s: %s\n", r.Settings, strings.Join(on, ", "))
	case !r.Changed:
		fmt.Fprintf(w, "no gateway hooks in %s: nothing to take out\n", r.Settings)
	case verb == "install":
		fmt.Fprintf(w, "installed the gateway's %s hooks in %s\n", strings.Join(on, ", "), r.Settings)
	default:
		fmt.Fprintf(w, "took the gateway's hooks out of %s\n", r.Settings)
	}
	if r.Backup != "" {
		fmt.Fprintf(w, "backup of the file as it was: %s\n", r.Backup)
	}
}
