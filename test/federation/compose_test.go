package federation

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// composeService is what the test reads of a compose service.
type composeService struct {
	Image       string            `yaml:"image"`
	Profiles    []string          `yaml:"profiles"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []any             `yaml:"volumes"` // short "name:/path" or long form
	Networks    []string          `yaml:"networks"`
	DependsOn   []string          `yaml:"depends_on"`
	ReadOnly    bool              `yaml:"read_only"`
	CapDrop     []string          `yaml:"cap_drop"`
}

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
	Networks map[string]any            `yaml:"networks"`
}

func readDocker(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docker", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// arg is the value after flag in args, or "".
func arg(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

func TestTheComposeFederationProfileRunsTwoGatewaysOnAThreeNodeCluster(t *testing.T) {
	var cf composeFile
	if err := yaml.Unmarshal([]byte(readDocker(t, "compose.yaml")), &cf); err != nil {
		t.Fatalf("compose.yaml does not parse: %v", err)
	}
	var fed []string
	for name, s := range cf.Services {
		if slices.Contains(s.Profiles, "federation") {
			fed = append(fed, name)
		}
	}
	slices.Sort(fed)
	if want := []string{"gateway-a", "gateway-b", "nats-1", "nats-2", "nats-3"}; !slices.Equal(fed, want) {
		t.Fatalf("profile federation has %v, want %v", fed, want)
	}
	nodes := []string{"nats-1", "nats-2", "nats-3"}
	var routes, clients []string
	for _, n := range nodes {
		routes = append(routes, "nats://"+n+":6222")
		clients = append(clients, "nats://"+n+":4222")
	}
	t.Run("each NATS node is named, routed to all three and stores on its own volume", func(t *testing.T) {
		for _, n := range nodes {
			s := cf.Services[n]
			if s.Image != "gateway-nats:latest" || arg(s.Command, "--name") != n || arg(s.Command, "--cluster_name") != "gateway" ||
				arg(s.Command, "--routes") != strings.Join(routes, ",") || !slices.Contains(s.Networks, "federation") {
				t.Errorf("%s = %+v", n, s)
			}
			if len(s.Volumes) != 1 || s.Volumes[0] != any(n+":/data") {
				t.Errorf("%s volumes %v, want %s:/data", n, s.Volumes, n)
			}
			if _, ok := cf.Volumes[n]; !ok {
				t.Errorf("volume %s is not declared", n)
			}
			if !s.ReadOnly || !slices.Contains(s.CapDrop, "ALL") {
				t.Errorf("%s is not hardened: %+v", n, s)
			}
		}
	})
	t.Run("each gateway joins every node under its own host name", func(t *testing.T) {
		hosts := map[string]bool{}
		for _, g := range []string{"gateway-a", "gateway-b"} {
			s := cf.Services[g]
			if s.Image != "gateway:latest" || s.Environment["GATEWAY_FEDERATION"] != strings.Join(clients, ",") ||
				!slices.Contains(s.Networks, "federation") || !slices.Equal(s.DependsOn, nodes) {
				t.Errorf("%s = %+v", g, s)
			}
			h := s.Environment["GATEWAY_HOST"]
			if !regexp.MustCompile(`^[a-z0-9-]+$`).MatchString(h) || hosts[h] {
				t.Errorf("%s host %q: empty, invalid or taken", g, h)
			}
			hosts[h] = true
			if v, _ := s.Volumes[0].(string); len(s.Volumes) != 1 || !strings.HasSuffix(v, ":/var/lib/gateway") {
				t.Errorf("%s keeps no state volume: %v", g, s.Volumes)
			}
			if !s.ReadOnly || !slices.Contains(s.CapDrop, "ALL") {
				t.Errorf("%s is not hardened: %+v", g, s)
			}
		}
	})
	t.Run("each gateway's command and environment pass serve's checks", func(t *testing.T) {
		for _, g := range []string{"gateway-a", "gateway-b"} {
			s := cf.Services[g]
			w := gatewaytest.NewWorld(t)
			cmd := exec.Command(gatewaytest.Bin(t), append([]string{"config", "--json"}, s.Command...)...)
			cmd.Env = w.Env()
			for k, v := range s.Environment {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: gateway config %v: %v\n%s", g, s.Command, err, out)
			}
			var keys []struct {
				Key    string `json:"key"`
				Value  any    `json:"value"`
				Source string `json:"source"`
			}
			if err := json.Unmarshal(out, &keys); err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if want, ok := map[string]string{"federation": s.Environment["GATEWAY_FEDERATION"], "host": s.Environment["GATEWAY_HOST"]}[k.Key]; ok &&
					(k.Value != want || k.Source != "env") {
					t.Errorf("%s: %s = %v from %s, want %s from env", g, k.Key, k.Value, k.Source, want)
				}
			}
		}
	})
	t.Run("the NATS image is built from scratch with the server from the module go.mod pins", func(t *testing.T) {
		cf := readDocker(t, "nats.Containerfile")
		froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(cf, -1)
		if len(froms) != 1 || froms[0][1] != "scratch" {
			t.Errorf("nats.Containerfile FROM %v, want only scratch", froms)
		}
		if !strings.Contains(cf, `ENTRYPOINT ["/nats-server", "--jetstream", "--store_dir", "/data"`) {
			t.Errorf("nats.Containerfile's entrypoint does not run JetStream on /data")
		}
		script := readDocker(t, "nats-context.sh")
		if !regexp.MustCompile(`go build [^\n]*\\\n\s+-o "\$dir/nats-server" github.com/nats-io/nats-server/v2\)`).MatchString(script) {
			t.Errorf("nats-context.sh does not build nats-server from the module")
		}
	})
}
