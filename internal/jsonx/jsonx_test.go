package jsonx

import "testing"

func TestMarshal(t *testing.T) {
	tests := []struct {
		name   string
		v      any
		indent string
		want   string
	}{
		{"angle brackets and ampersands stay as written", map[string]string{"a": "<b>&"}, "", `{"a":"<b>&"}`},
		{"there is no trailing newline", []int{1, 2}, "", `[1,2]`},
		{"an indent lays it out as JSON.stringify does", map[string]int{"a": 1}, "  ", "{\n  \"a\": 1\n}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []byte
			var err error
			if tt.indent == "" {
				got, err = Marshal(tt.v)
			} else {
				got, err = MarshalIndent(tt.v, tt.indent)
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	t.Run("an unencodable value is an error", func(t *testing.T) {
		if _, err := Marshal(make(chan int)); err == nil {
			t.Fatal("no error for a channel")
		}
	})
}
