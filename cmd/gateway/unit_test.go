package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// serviceSettings reads the [Service] section of a unit file: each key with
// every value it is given, in order, as systemd accumulates them.
func serviceSettings(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	settings := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		case section == "Service":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: %q is not key=value", path, line)
			}
			settings[k] = append(settings[k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return settings
}

// The unit is a user unit (deploy/gateway.service says how to install it):
// its hardening must be what a user manager applies, and must leave the
// gateway every path and socket family it uses.
func TestTheSystemdUserUnitsHardeningAppliesAndLeavesTheGatewayWhatItNeeds(t *testing.T) {
	s := serviceSettings(t, "../../deploy/gateway.service")
	has := func(key, want string) bool { return slices.Contains(s[key], want) }
	words := func(key string) []string {
		var out []string
		for _, v := range s[key] {
			for _, w := range strings.Fields(v) {
				out = append(out, strings.TrimLeft(w, "-+"))
			}
		}
		return out
	}
	writable := words("ReadWritePaths")
	families := words("RestrictAddressFamilies")
	// Settings a user manager applies only inside a user namespace of the
	// service's own (systemd.exec: "when PrivateUsers= is enabled").
	mountSettings := []string{"ProtectSystem", "ProtectHome", "ReadWritePaths", "ReadOnlyPaths",
		"InaccessiblePaths", "PrivateDevices", "ProtectKernelTunables", "ProtectKernelModules",
		"ProtectKernelLogs", "ProtectClock", "ProtectHostname"}
	usesMountSettings := slices.ContainsFunc(mountSettings, func(k string) bool { return len(s[k]) > 0 })

	tests := []struct {
		name string
		ok   bool
		keys []string // the settings the error quotes
	}{
		{"it sets no capability option, which a user manager refuses",
			len(s["CapabilityBoundingSet"]) == 0 && len(s["AmbientCapabilities"]) == 0,
			[]string{"CapabilityBoundingSet", "AmbientCapabilities"}},
		// Asked for explicitly, a user namespace that cannot be made fails
		// the start (Ubuntu restricts unprivileged ones by default); the
		// mount settings alone are applied where one can be made.
		{"it starts without a user namespace of its own, where none can be made",
			len(s["PrivateUsers"]) == 0 || has("PrivateUsers", "no"),
			[]string{"PrivateUsers"}},
		{"it still asks for the mount settings a user namespace brings",
			usesMountSettings, []string{"ProtectSystem", "ProtectHome", "PrivateDevices"}},
		{"it gains no privileges across exec", has("NoNewPrivileges", "yes"), []string{"NoNewPrivileges"}},
		{"the system is read-only to it", has("ProtectSystem", "strict"), []string{"ProtectSystem"}},
		{"it can write its state directory",
			has("StateDirectory", "gateway") && slices.Contains(writable, "%S/gateway"),
			[]string{"StateDirectory", "ReadWritePaths"}},
		{"it can write the Claude Code and Qwen Code registries",
			slices.Contains(writable, "%h/.claude") && slices.Contains(writable, "%h/.qwen"),
			[]string{"ReadWritePaths"}},
		{"it can bind its sockets in the runtime directory and in /tmp",
			slices.Contains(writable, "%t") && slices.Contains(writable, "/tmp"),
			[]string{"ReadWritePaths"}},
		{"it can open Unix, IPv4 and IPv6 sockets",
			slices.Contains(families, "AF_UNIX") && slices.Contains(families, "AF_INET") && slices.Contains(families, "AF_INET6"),
			[]string{"RestrictAddressFamilies"}},
		// The reply-socket check asks sock_diag; /proc/net/unix can be forged.
		{"it can ask the kernel which process holds a reply socket",
			slices.Contains(families, "AF_NETLINK"), []string{"RestrictAddressFamilies"}},
		{"what it writes is its user's alone",
			has("UMask", "0077") && has("StateDirectoryMode", "0700"),
			[]string{"UMask", "StateDirectoryMode"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok {
				var got []string
				for _, k := range tt.keys {
					got = append(got, fmt.Sprintf("%s=%q", k, s[k]))
				}
				t.Errorf("deploy/gateway.service has %s", strings.Join(got, " "))
			}
		})
	}
}
