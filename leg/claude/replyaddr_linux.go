package claude

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// socketOwnedBy reports whether the listening Unix socket bound at path is
// held open by process pid: return-address verification, so receipts go only
// to the process that sent the message from that address. A full check
// asks the kernel about every socket fd of pid (findOwner); its proof is
// kept (see owners) and re-checked with an lstat and one readlink.
func socketOwnedBy(path string, pid int) (bool, error) {
	key := ownerKey{path: path, pid: pid}
	before, isSocket := socketFileID(path)
	if isSocket {
		owners.mu.Lock()
		proof, ok := owners.m[key]
		owners.mu.Unlock()
		if ok && proof.file == before {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, proof.fd)); err == nil && l == proof.link {
				return true, nil
			}
		}
	}
	owners.mu.Lock()
	delete(owners.m, key)
	owners.mu.Unlock()
	owned, fd, link, err := findOwner(path, pid)
	// Kept only when the path was the same file before and after the scan.
	if after, ok := socketFileID(path); owned && isSocket && ok && after == before {
		owners.mu.Lock()
		if len(owners.m) >= maxOwnerProofs {
			clear(owners.m)
		}
		owners.m[key] = ownerProof{file: before, fd: fd, link: link}
		owners.mu.Unlock()
	}
	return owned, err
}

// owners are the proofs of the full checks that found a socket held: the
// socket's file at the path (device and inode) and the fd of pid linking
// to the socket. While the path is that same file and the fd still links
// to that socket, the socket bound at the path is still held by pid: a
// bound path cannot be bound again without being unlinked first (which
// makes a new file), and an fd names one socket until it is closed.
var owners = struct {
	mu sync.Mutex
	m  map[ownerKey]ownerProof
}{m: map[ownerKey]ownerProof{}}

// maxOwnerProofs bounds owners; past it they are all forgotten.
const maxOwnerProofs = 256

type ownerKey struct {
	path string
	pid  int
}

type ownerProof struct {
	file     fileID
	fd, link string // the fd's name under /proc/<pid>/fd and its link, socket:[inode]
}

type fileID struct{ dev, ino uint64 }

// socketFileID identifies the socket file at path; false when it is not
// one.
func socketFileID(path string) (fileID, bool) {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSocket == 0 {
		return fileID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: st.Dev, ino: st.Ino}, true
}

// scanOwner is the full check where sock_diag cannot be used: the
// listening sockets bound at path, as /proc/net/unix lists them, against
// the fds of pid; it names the fd that holds one. A socket whose name
// holds a '\n' can forge a line of that table (see parseNetUnix).
func scanOwner(path string, pid int) (owned bool, fd, link string, err error) {
	inodes, err := listeningInodes(path)
	if err != nil || len(inodes) == 0 {
		return false, "", "", err
	}
	return socketFDOf(pid, func(ino uint32) (bool, error) {
		return inodes[strconv.FormatUint(uint64(ino), 10)], nil
	})
}

// socketFDOf walks the socket fds of pid, calling is with each one's
// inode until it reports the one looked for (named by its fd and link) or
// an error; a fd closed meanwhile is skipped.
func socketFDOf(pid int, is func(ino uint32) (bool, error)) (found bool, fd, link string, err error) {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	dir, err := os.Open(fdDir)
	if err != nil {
		return false, "", "", err
	}
	defer dir.Close()
	for {
		names, rerr := dir.Readdirnames(256)
		for _, name := range names {
			l, err := os.Readlink(fdDir + "/" + name)
			if err != nil {
				continue
			}
			ino, ok := socketInode(l)
			if !ok {
				continue
			}
			if found, err := is(ino); err != nil || found {
				return found, name, l, err
			}
		}
		if rerr == io.EOF {
			return false, "", "", nil
		}
		if rerr != nil {
			return false, "", "", rerr
		}
	}
}

// socketInode reads the inode out of an fd's link, socket:[N].
func socketInode(link string) (uint32, bool) {
	s, ok := strings.CutPrefix(link, "socket:[")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, "]")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err == nil && n != 0
}

// acceptCon is __SO_ACCEPTCON in /proc/net/unix Flags: a listening socket.
const acceptCon = 0x10000

// listeningInodes reads /proc/net/unix for listening sockets bound at path.
func listeningInodes(path string) (map[string]bool, error) {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseNetUnix(f, path), nil
}

// parseNetUnix returns the inodes of the listening sockets /proc/net/unix
// lists at path. The kernel prints a path byte for byte after one space:
// a line ends at '\n' only (a '\r' before it is the path's) and the path
// is everything after that space (one that starts with more is another).
// A path holding a '\n' would print a line of its own choosing, which no
// reader of this table can tell from the kernel's.
func parseNetUnix(r interface{ Read([]byte) (int, error) }, path string) map[string]bool {
	out := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	sc.Split(scanNewlines)
	sc.Scan() // header
	for sc.Scan() {
		line := sc.Bytes()
		// Num RefCount Protocol Flags Type St Inode Path
		fields := bytes.Fields(line)
		if len(fields) < 8 {
			continue
		}
		// A path may contain spaces: it is everything after the 7th field.
		idx := 0
		for i := 0; i < 7; i++ {
			j := bytes.Index(line[idx:], fields[i])
			idx += j + len(fields[i])
		}
		if p, ok := bytes.CutPrefix(line[idx:], []byte(" ")); !ok || string(p) != path {
			continue
		}
		flags, err := strconv.ParseUint(string(fields[3]), 16, 64)
		if err != nil || flags&acceptCon == 0 {
			continue
		}
		out[string(fields[6])] = true
	}
	return out
}

// scanNewlines is bufio.ScanLines without dropping a '\r' before the '\n'.
func scanNewlines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}
