package settings

import "testing"

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1GiB", 1 << 30, true}, {"512MiB", 512 << 20, true}, {"10 MB", 10 << 20, true}, {"64k", 64 << 10, true},
		{"1000", 1000, true}, {"7B", 7, true}, {"", 0, false}, {"1.5GiB", 0, false}, {"GiB", 0, false},
		{"3TiB", 0, false}, {"99999999999G", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
