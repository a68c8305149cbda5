package container

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// What Debian's podman-compose (1.0.3) does with docker/compose.yaml, seen
// with --dry-run, and why these tests run each service's podman run line
// themselves instead:
//
//   - no profiles (--profile): services are named on the command line;
//   - pid: host is dropped: the local profile's gateway would get its own
//     pid namespace, and its registry records would name pids that the
//     host's sessions cannot see;
//   - network_mode is followed by --net of a default network, so
//     network_mode: none becomes a bridge network;
//   - stop_grace_period is dropped (podman stop's 10 s applies);
//   - nested defaults (${A:-${B}/x}) leave a stray "}" in paths, and an
//     empty default (${A:-}) is left unreplaced.
//
// runLine below turns a service into the podman run line compose means;
// the bridge network (service names as hosts) becomes the host's network
// with each name on its own loopback address, as tests talk over loopback
// only.

// service is what a compose service may hold, as far as this file uses.
type service struct {
	Image           string            `yaml:"image"`
	Profiles        []string          `yaml:"profiles"`
	Command         []string          `yaml:"command"`
	User            string            `yaml:"user"`
	Pid             string            `yaml:"pid"`
	NetworkMode     string            `yaml:"network_mode"`
	Networks        []string          `yaml:"networks"`
	Environment     map[string]string `yaml:"environment"`
	Volumes         []yaml.Node       `yaml:"volumes"`
	Secrets         []string          `yaml:"secrets"`
	Tmpfs           []string          `yaml:"tmpfs"`
	ReadOnly        bool              `yaml:"read_only"`
	CapDrop         []string          `yaml:"cap_drop"`
	SecurityOpt     []string          `yaml:"security_opt"`
	StopGracePeriod string            `yaml:"stop_grace_period"`
	Restart         string            `yaml:"restart"`
	Ports           []string          `yaml:"ports"`
	DependsOn       []string          `yaml:"depends_on"`
}

// volume is a long-form volume entry.
type volume struct {
	Type     string `yaml:"type"`
	Source   string `yaml:"source"`
	Target   string `yaml:"target"`
	ReadOnly bool   `yaml:"read_only"`
}

type composeFile struct {
	Name     string             `yaml:"name"`
	Services map[string]service `yaml:"services"`
	Secrets  map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
}

// loadCompose reads docker/compose.yaml with vars interpolated into every
// value, as compose does (unset variables are empty).
func loadCompose(t testing.TB, vars map[string]string) composeFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docker", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	var walk func(n *yaml.Node) error
	walk = func(n *yaml.Node) error {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
			v, err := interpolate(n.Value, vars)
			if err != nil {
				return fmt.Errorf("line %d: %w", n.Line, err)
			}
			n.Value = v
		}
		for _, c := range n.Content {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(&doc); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	var f composeFile
	if err := doc.Decode(&f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return f
}

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*`)

// interpolate replaces $$, $NAME, ${NAME}, ${NAME:-default},
// ${NAME-default}, ${NAME:?error} and ${NAME?error} in s, defaults and
// errors themselves interpolated (so nested), as compose does.
func interpolate(s string, vars map[string]string) (string, error) {
	var out strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 || i == len(s)-1 {
			out.WriteString(s)
			return out.String(), nil
		}
		out.WriteString(s[:i])
		s = s[i+1:]
		switch {
		case s[0] == '$':
			out.WriteByte('$')
			s = s[1:]
		case s[0] == '{':
			end, depth := -1, 0
			for j, r := range s {
				if r == '{' {
					depth++
				} else if r == '}' {
					if depth--; depth == 0 {
						end = j
						break
					}
				}
			}
			if end < 0 {
				return "", fmt.Errorf("unclosed ${ in %q", s)
			}
			body := s[1:end]
			s = s[end+1:]
			name := varName.FindString(body)
			if name == "" {
				return "", fmt.Errorf("bad variable ${%s}", body)
			}
			v, set := vars[name]
			op := body[len(name):]
			switch {
			case op == "":
			case strings.HasPrefix(op, ":-") && v == "", strings.HasPrefix(op, "-") && !set:
				d, err := interpolate(strings.TrimPrefix(strings.TrimPrefix(op, ":"), "-"), vars)
				if err != nil {
					return "", err
				}
				v = d
			case strings.HasPrefix(op, ":?") && v == "", strings.HasPrefix(op, "?") && !set:
				msg, _ := interpolate(strings.TrimPrefix(strings.TrimPrefix(op, ":"), "?"), vars)
				return "", fmt.Errorf("%s: %s", name, msg)
			case strings.HasPrefix(op, ":-"), strings.HasPrefix(op, "-"), strings.HasPrefix(op, ":?"), strings.HasPrefix(op, "?"):
			default:
				return "", fmt.Errorf("bad variable ${%s}", body)
			}
			out.WriteString(v)
		default:
			name := varName.FindString(s)
			if name == "" {
				out.WriteByte('$')
				continue
			}
			out.WriteString(vars[name])
			s = s[len(name):]
		}
	}
}

func TestComposeInterpolationIsCompose(t *testing.T) {
	vars := map[string]string{"A": "a", "EMPTY": "", "HOME": "/home/u"}
	tests := []struct{ in, want, err string }{
		{"$A/${A}", "a/a", ""},
		{"${UNSET:-${HOME}/.claude}", "/home/u/.claude", ""},
		{"${A:-${HOME}/.claude}", "a", ""},
		{"${EMPTY:-d}|${EMPTY-d}|${UNSET-d}", "d||d", ""},
		{"${UNSET:-}x", "x", ""},
		{"$$A", "$A", ""},
		{"${UNSET:?set UNSET}", "", "UNSET: set UNSET"},
		{"${A", "", "unclosed"},
	}
	for _, tt := range tests {
		got, err := interpolate(tt.in, vars)
		if got != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("interpolate(%q) = %q, %v; want %q, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// loopbackHosts gives each service name of a bridge network its own
// loopback address: on the host's network, nats-1, nats-2 and nats-3
// each bind their compose ports on their own address.
var loopbackHosts = map[string]string{"nats-1": "127.0.42.1", "nats-2": "127.0.42.2", "nats-3": "127.0.42.3"}

// runLine is the podman run line (without "run" and the name) of service
// name in f, its named volumes prefixed with project, the restart policy
// left to the test (it kills and restarts containers itself); extra goes
// before the image.
func runLine(t testing.TB, f composeFile, project, name string, extra ...string) []string {
	t.Helper()
	s, ok := f.Services[name]
	if !ok {
		t.Fatalf("compose.yaml has no service %s", name)
	}
	var args []string
	add := func(a ...string) { args = append(args, a...) }
	switch {
	case s.NetworkMode != "":
		add("--network", s.NetworkMode)
	default: // compose's own network: the host's, names on loopback
		add("--network", "host")
		hosts := make([]string, 0, len(loopbackHosts))
		for h := range loopbackHosts {
			hosts = append(hosts, h)
		}
		sort.Strings(hosts)
		for _, h := range hosts {
			add("--add-host", h+":"+loopbackHosts[h])
		}
	}
	if s.User != "" {
		add("--user", s.User)
	}
	if s.Pid != "" {
		add("--pid", s.Pid)
	}
	if s.ReadOnly {
		add("--read-only")
	}
	for _, m := range s.Tmpfs {
		add("--tmpfs", m)
	}
	for _, c := range s.CapDrop {
		add("--cap-drop", c)
	}
	for _, o := range s.SecurityOpt {
		add("--security-opt", o)
	}
	if s.StopGracePeriod != "" {
		d, err := time.ParseDuration(s.StopGracePeriod)
		if err != nil {
			t.Fatalf("%s: stop_grace_period %q: %v", name, s.StopGracePeriod, err)
		}
		add("--stop-timeout", fmt.Sprint(int(d.Seconds())))
	}
	keys := make([]string, 0, len(s.Environment))
	for k := range s.Environment {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		add("--env", k+"="+s.Environment[k])
	}
	for _, n := range s.Volumes {
		if n.Kind == yaml.ScalarNode { // NAME:/path, a named volume
			src, rest, _ := strings.Cut(n.Value, ":")
			if strings.HasPrefix(src, "/") || strings.HasPrefix(src, ".") {
				t.Fatalf("%s: bind mount %q in short form", name, n.Value)
			}
			add("--volume", project+"_"+src+":"+rest)
			continue
		}
		var v volume
		if err := n.Decode(&v); err != nil {
			t.Fatal(err)
		}
		switch v.Type {
		case "bind":
			m := "type=bind,source=" + v.Source + ",target=" + v.Target
			if v.ReadOnly {
				m += ",readonly"
			}
			add("--mount", m)
		case "volume":
			add("--volume", project+"_"+v.Source+":"+v.Target)
		default:
			t.Fatalf("%s: volume type %q", name, v.Type)
		}
	}
	for _, sec := range s.Secrets { // a file secret, as compose mounts it outside swarm
		add("--mount", "type=bind,source="+f.Secrets[sec].File+",target=/run/secrets/"+sec+",readonly")
	}
	add(extra...)
	add(s.Image)
	return append(args, s.Command...)
}
