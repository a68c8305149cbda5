package claude

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// socketOwnedBy reports whether the listening Unix socket bound at path is
// held open by process pid: return-address verification, so receipts go only
// to the process that sent the message from that address.
func socketOwnedBy(path string, pid int) (bool, error) {
	inodes, err := listeningInodes(path)
	if err != nil || len(inodes) == 0 {
		return false, err
	}
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		l, err := os.Readlink(fdDir + "/" + e.Name())
		if err != nil {
			continue
		}
		if ino, ok := strings.CutPrefix(l, "socket:["); ok {
			if inodes[strings.TrimSuffix(ino, "]")] {
				return true, nil
			}
		}
	}
	return false, nil
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

func parseNetUnix(r interface{ Read([]byte) (int, error) }, path string) map[string]bool {
	out := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
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
		p := strings.TrimLeft(string(line[idx:]), " ")
		if p != path {
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
