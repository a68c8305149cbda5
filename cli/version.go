package cli

import (
	"fmt"
	"io"
	"runtime/debug"
)

// BuildInfo is what `gateway version` says of the binary: its version and
// the commit it was built from (Go's build info), when the build knew it.
type BuildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	Go       string `json:"go,omitempty"`
}

// Build reads the binary's build info.
func Build(version string) BuildInfo {
	b := BuildInfo{Version: version}
	if bi, ok := debug.ReadBuildInfo(); ok {
		b.Go = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	return b
}

// String is the one line `gateway version` and `--version` print.
func (b BuildInfo) String() string {
	s := "gateway " + b.Version
	if b.Commit != "" {
		c := b.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		s += " (commit " + c
		if b.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return s
}

// Version prints the build info.
func Version(o *IO, version string) {
	b := Build(version)
	o.Print(b, func(w io.Writer) { fmt.Fprintln(w, b) })
}
