package hosted

import (
	"flag"
	"fmt"
	"log/slog"
)

// Flags are serve's hosted-session flags; each also reads its GATEWAY_*
// variable through the configuration layer (--max-hosted is
// GATEWAY_MAX_HOSTED).
type Flags struct {
	maxHosted            *int
	claudePath, qwenPath *string
}

// RegisterFlags adds the hosted-session flags to fs.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	return &Flags{
		maxHosted:  fs.Int("max-hosted", DefaultMaxHosted, "sessions the gateway may start and run at once (gateway run, POST /v1/local/sessions); 0 turns starting sessions off"),
		claudePath: fs.String("claude-path", "", "the Claude Code CLI hosted sessions run (default: claude on PATH)"),
		qwenPath:   fs.String("qwen-path", "", "the Qwen Code CLI hosted sessions run (default: qwen on PATH)"),
	}
}

// Enabled says whether the gateway may start sessions: it then serves
// with no local leg too.
func (f *Flags) Enabled() bool { return f != nil && *f.maxHosted > 0 }

// Check validates the flags.
func (f *Flags) Check() error {
	if f != nil && *f.maxHosted < 0 {
		return fmt.Errorf("--max-hosted %d: want 0 (off) or more", *f.maxHosted)
	}
	return nil
}

// Leg is the hosted leg these flags ask for, keeping its sessions in
// stateDir; nil when starting sessions is off.
func (f *Flags) Leg(stateDir string, log *slog.Logger) (*Leg, error) {
	if f == nil || *f.maxHosted == 0 {
		return nil, nil
	}
	return New(Config{StateDir: stateDir, ClaudePath: *f.claudePath, QwenPath: *f.qwenPath, MaxHosted: *f.maxHosted, Logger: log})
}
