package gateway_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// firstCommand is the README's first command, as a new user copies it.
const firstCommand = "bash scripts/serve.sh"

// TestTheReadmesFirstCommandLeavesARunningGatewayAndItsBinary runs the
// README's first command in a sandbox (from another directory, so the
// repository's own ./gateway is left alone): it must build ./gateway there,
// say so before the build's silent minute, and leave a gateway serving.
func TestTheReadmesFirstCommandLeavesARunningGatewayAndItsBinary(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	first := regexp.MustCompile("(?s)```sh\n(.*?)\n```").FindSubmatch(readme)
	if first == nil || string(first[1]) != firstCommand {
		t.Fatalf("the README's first command is %q, want %q (the command this test runs)", first, firstCommand)
	}
	w := gatewaytest.NewWorld(t)
	script, err := filepath.Abs(strings.TrimPrefix(firstCommand, "bash "))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script)
	cmd.Dir = w.Root
	// The World moves HOME; the build keeps this machine's Go caches.
	cmd.Env = append(w.Env(), goEnv(t, "GOCACHE", "GOMODCACHE", "GOPATH")...)
	g := gatewaytest.StartCmd(t, w, "gateway", cmd, 5*time.Minute) // a cold build on a busy machine
	if !strings.HasPrefix(g.Logs(), "building ") {
		t.Errorf("%s did not start by saying it builds:\n%s", firstCommand, g.Logs())
	}
	if _, err := exec.LookPath("gateway"); err != nil && !strings.Contains(g.Logs(), "go install -C") {
		t.Errorf("%s did not say how to put gateway on PATH, which its hints need:\n%s", firstCommand, g.Logs())
	}
	if !strings.Contains(string(readme), "put it on PATH once with\n`go install ./cmd/gateway`") || !strings.Contains(string(readme), "needs root for apt-get") {
		t.Error("the README does not say how to put gateway on PATH, or that the test command needs root")
	}
	if v, err := exec.Command(filepath.Join(w.Root, "gateway"), "version").Output(); err != nil || len(v) == 0 {
		t.Errorf("./gateway version: %q, %v", v, err)
	}
	// The script execs the gateway: its process is the gateway, and SIGTERM
	// stops it cleanly.
	if err := g.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.Exited():
		if g.ExitErr() != nil {
			t.Errorf("the gateway exited with %v on SIGTERM:\n%s", g.ExitErr(), g.Logs())
		}
	case <-time.After(30 * time.Second):
		t.Errorf("the gateway did not stop on SIGTERM")
	}
}

// goEnv is KEY=VALUE for each of keys as `go env` reports it here.
func goEnv(t *testing.T, keys ...string) []string {
	t.Helper()
	b, err := exec.Command("go", append([]string{"env"}, keys...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	vals := strings.Split(strings.TrimSpace(string(b)), "\n")
	env := make([]string, 0, len(keys))
	for i, k := range keys {
		env = append(env, k+"="+vals[i])
	}
	return env
}

// TestTheReadmesTestsSectionNamesWhatTheTestCommandInstalls: a reader of
// "## Tests" learns every package the test command puts on the machine,
// each npm one at the version it pins (it named neither the MCP SDK nor
// procps).
func TestTheReadmesTestsSectionNamesWhatTheTestCommandInstalls(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, tests, ok := strings.Cut(string(readme), "\n## Tests\n")
	if !ok {
		t.Fatal(`README has no "## Tests"`)
	}
	tests, _, _ = strings.Cut(tests, "\n#")
	b, err := os.ReadFile(".ci/install-interop.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := string(b)
	versions := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z_]+_VERSION)=(\S+)$`).FindAllStringSubmatch(script, -1) {
		versions[m[1]] = m[2]
	}
	var want []string
	for _, m := range regexp.MustCompile(`(?:npm_pinned "[^"]+" (\S+) "\$|"(@[a-z0-9/-]+)@\$)([A-Z_]+_VERSION)`).FindAllStringSubmatch(script, -1) {
		want = append(want, fmt.Sprintf("%s@%s", m[1]+m[2], versions[m[3]]))
	}
	debs := regexp.MustCompile(`PKG_FOR=\(([^)]*)\)`).FindStringSubmatch(script)
	if debs == nil || len(want) < 5 {
		t.Fatalf("install-interop.sh changed shape: npm %q, Debian %q", want, debs)
	}
	for _, m := range regexp.MustCompile(`\]=([a-z0-9-]+)`).FindAllStringSubmatch(debs[1], -1) {
		want = append(want, m[1])
	}
	for _, w := range want {
		if !strings.Contains(tests, w) {
			t.Errorf("README's Tests section does not say the test command installs %s", w)
		}
	}
}

// readmeLines is the most README may hold: it is a guide, and the
// reference lives in docs/.
const readmeLines = 300

// TestTheReadmeIsAGuideThatLinksEveryReferencePage: README stays short, and
// every page of docs/ is reachable from it.
func TestTheReadmeIsAGuideThatLinksEveryReferencePage(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > readmeLines {
		t.Errorf("README.md has %d lines, more than %d: move the reference to docs/", n, readmeLines)
	}
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("docs/ holds only %v", pages)
	}
	linked := map[string]bool{}
	for _, l := range mdLinks(string(readme)) {
		linked[strings.SplitN(l, "#", 2)[0]] = true
	}
	for _, p := range pages {
		if !linked[p] {
			t.Errorf("README.md does not link %s", p)
		}
	}
}

// TestTheDocsLinksLeadSomewhere: every relative link of README.md and the
// pages under docs/ names a file of the repository, and an anchor names a
// heading of that file.
func TestTheDocsLinksLeadSomewhere(t *testing.T) {
	files := []string{"README.md"}
	err := filepath.WalkDir("docs", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range mdLinks(string(b)) {
			if strings.Contains(l, "://") || strings.HasPrefix(l, "mailto:") {
				continue
			}
			target, anchor, _ := strings.Cut(l, "#")
			path := f
			if target != "" {
				path = filepath.Join(filepath.Dir(f), target)
			}
			checked++
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links %s: %v", f, l, err)
				continue
			}
			if anchor == "" {
				continue
			}
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(headingAnchors(string(text)), anchor) {
				t.Errorf("%s links %s: %s has no heading #%s", f, l, path, anchor)
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d links; the scan no longer sees them", checked)
	}
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// mdLinks are the targets of a Markdown text's inline links, outside
// fenced code.
func mdLinks(text string) []string {
	var out []string
	for _, line := range proseLines(text) {
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// headingAnchors are the anchors a Markdown text's headings get, as GitHub
// makes them: lower case, spaces as hyphens, punctuation dropped.
func headingAnchors(text string) []string {
	var out []string
	for _, line := range proseLines(text) {
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// proseLines are a Markdown text's lines outside fenced code blocks.
func proseLines(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
}
