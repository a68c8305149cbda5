package qwencli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

// run runs one non-interactive qwen subcommand against a Qwen home, with a
// scratch HOME and nothing else inherited but PATH.
func run(ctx context.Context, bin, qwenHome string, args ...string) ([]byte, error) {
	if bin == "" {
		var err error
		if bin, err = Bin(); err != nil {
			return nil, err
		}
	}
	home, err := os.MkdirTemp("", "qwhome")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "QWEN_HOME=" + qwenHome, "TMPDIR=" + home}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("qwen %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// ListSessions runs `qwen sessions ps --json` against a Qwen home and returns
// its records, newest first, as the CLI printed them (it leaves ipcToken
// out). bin "" means Bin().
func ListSessions(ctx context.Context, bin, qwenHome string) ([]Record, []byte, error) {
	out, err := run(ctx, bin, qwenHome, "sessions", "ps", "--json")
	if err != nil {
		return nil, out, err
	}
	recs, err := ParseRecordLines(out)
	return recs, out, err
}

// Controller is a grant minted by `qwen sessions controllers add`.
type Controller struct {
	ID    string // c_<8 hex>, what `controllers remove` takes
	Label string
	Token Token // qpc_<64 hex>, printed once and stored only hashed
}

// AddController mints a controller token for a Qwen home with
// `qwen sessions controllers add --label label`. bin "" means Bin().
func AddController(ctx context.Context, bin, qwenHome, label string) (Controller, error) {
	out, err := run(ctx, bin, qwenHome, "sessions", "controllers", "add", "--label", label)
	if err != nil {
		return Controller{}, err
	}
	c, err := ParseControllerAdd(out)
	if err != nil {
		return Controller{}, err
	}
	c.Label = label
	return c, nil
}

var (
	controllerIDRe    = regexp.MustCompile(`added \((c_[0-9a-f]+)\)`)
	controllerTokenRe = regexp.MustCompile(`\bqpc_[0-9a-f]{64}\b`)
)

// ErrNoController says the output of `controllers add` held no id or token.
var ErrNoController = errors.New("qwencli: no controller id and token in the output")

// ParseControllerAdd reads the id and token out of what
// `qwen sessions controllers add` printed. The token appears twice (alone,
// then inside an example auth line); both are the same.
func ParseControllerAdd(out []byte) (Controller, error) {
	id := controllerIDRe.FindSubmatch(out)
	tokens := controllerTokenRe.FindAll(out, -1)
	if id == nil || len(tokens) == 0 {
		return Controller{}, ErrNoController
	}
	for _, t := range tokens[1:] {
		if string(t) != string(tokens[0]) {
			return Controller{}, fmt.Errorf("%w: two different tokens", ErrNoController)
		}
	}
	return Controller{ID: string(id[1]), Token: Token(tokens[0])}, nil
}
