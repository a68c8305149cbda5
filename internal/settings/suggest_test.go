package settings

import (
	"flag"
	"slices"
	"testing"
)

func TestAMisspeltVariableIsNamedWithTheOneItIsNear(t *testing.T) {
	fs := flag.NewFlagSet("app", flag.ContinueOnError)
	fs.String("remote-org", "", "")
	fs.String("log-format", "", "")
	fs.String("api", "", "")
	tests := []struct {
		name string
		kv   string
		want []Misspelt
	}{
		{"a typo", "APP_REMOTE_ORGG=x", []Misspelt{{"APP_REMOTE_ORGG", "APP_REMOTE_ORG"}}},
		{"two letters swapped", "APP_LOG_FROMAT=json", []Misspelt{{"APP_LOG_FROMAT", "APP_LOG_FORMAT"}}},
		{"a dash for an underscore", "APP_LOG-FORMAT=json", []Misspelt{{"APP_LOG-FORMAT", "APP_LOG_FORMAT"}}},
		{"a real one", "APP_REMOTE_ORG=x", nil},
		{"a real one's file", "APP_REMOTE_ORG_FILE=/f", nil},
		{"one far from every flag", "APP_INTEROP_CACHE=/c", nil},
		{"a short one two edits off", "APP_UID=1000", nil},
		{"another prefix", "OTHER_REMOTE_ORGG=x", nil},
		{"the prefix alone", "APP_=x", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MisspeltEnv(fs, "APP_", []string{tt.kv}); !slices.Equal(got, tt.want) {
				t.Errorf("MisspeltEnv(%q) = %v, want %v", tt.kv, got, tt.want)
			}
		})
	}
}
