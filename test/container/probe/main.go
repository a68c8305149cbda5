// Command probe reports, as JSON, what a process inside a container sees:
// its ids, capability sets and no_new_privs, whether the root filesystem
// and /tmp take writes, and the owner and mode of each path it is given
// (and of what each directory holds). The container tests mount it
// read-only into the gateway's container and run it with podman exec, as
// the container's own user. Static (no cgo): the image has no libc.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

type file struct {
	Path string `json:"path"`
	Mode string `json:"mode"` // octal permission bits, "d" first for a directory
	UID  uint32 `json:"uid"`
	GID  uint32 `json:"gid"`
}

type report struct {
	UID, GID     int
	Status       map[string]string // CapInh, CapPrm, CapEff, CapBnd, CapAmb, NoNewPrivs
	RootWritable string            // "" if a file could be made at /, else the error
	TmpWritable  string
	Files        []file
	Errors       []string
}

func main() {
	r := report{UID: os.Getuid(), GID: os.Getgid(), Status: map[string]string{}}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && (strings.HasPrefix(k, "Cap") || k == "NoNewPrivs") {
				r.Status[k] = strings.TrimSpace(v)
			}
		}
	}
	r.RootWritable = tryWrite("/probe-write-test")
	r.TmpWritable = tryWrite("/tmp/probe-write-test")
	for _, p := range os.Args[1:] {
		paths := []string{p}
		if entries, err := os.ReadDir(p); err == nil {
			for _, e := range entries {
				paths = append(paths, filepath.Join(p, e.Name()))
			}
		}
		for _, q := range paths {
			fi, err := os.Lstat(q)
			if err != nil {
				r.Errors = append(r.Errors, err.Error())
				continue
			}
			st := fi.Sys().(*syscall.Stat_t)
			mode := fmt.Sprintf("%04o", st.Mode&0o7777)
			if fi.IsDir() {
				mode = "d" + mode
			}
			r.Files = append(r.Files, file{Path: q, Mode: mode, UID: st.Uid, GID: st.Gid})
		}
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
}

// tryWrite makes and removes a file at path: "" when that worked, else why not.
func tryWrite(path string) string {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return errno.Error()
		}
		return err.Error()
	}
	f.Close()
	os.Remove(path)
	return ""
}
