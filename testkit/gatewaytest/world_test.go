package gatewaytest

import (
	"os"
	"slices"
	"testing"
)

func TestAWorldsEnvironmentIsItsOwn(t *testing.T) {
	t.Setenv("GATEWAY_NAME", "from-the-developer")
	w := NewWorld(t)
	env := w.Env()
	if slices.Contains(env, "GATEWAY_NAME=from-the-developer") {
		t.Error("the process's GATEWAY_* variables leak into the World")
	}
	for _, kv := range []string{"CLAUDE_CONFIG_DIR=" + w.ConfigDir, "XDG_RUNTIME_DIR=" + w.Runtime,
		"GATEWAY_STATE_DIR=" + w.StateDir, "QWEN_HOME=" + w.QwenHome, "HOME=" + w.Root} {
		if !slices.Contains(env, kv) {
			t.Errorf("Env lacks %s", kv)
		}
	}
	if w.Getenv("PATH") != "" || w.Getenv("QWEN_HOME") != w.QwenHome {
		t.Error("Getenv should see the World's variables only")
	}
	for _, d := range []string{w.ConfigDir, w.Runtime, w.QwenHome} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v", d, err)
		}
	}
}
