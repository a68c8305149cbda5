package settings

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads a byte count with an optional unit: B, KiB, MiB, GiB
// (or K, M, G, KB, MB, GB, all powers of 1024).
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	num := strings.TrimRightFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	unit := strings.ToLower(strings.TrimSpace(s[len(num):]))
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, err
	}
	shift := map[string]uint{"": 0, "b": 0, "k": 10, "kb": 10, "kib": 10, "m": 20, "mb": 20, "mib": 20, "g": 30, "gb": 30, "gib": 30}
	sh, ok := shift[unit]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q", unit)
	}
	if n > (1<<62)>>sh {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n << sh, nil
}
