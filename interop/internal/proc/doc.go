// Package proc holds what the interop harnesses for real CLIs (claudecli,
// qwencli) do alike with the processes they run: finding an installed binary
// in the interop cache, keeping the tail of its output for failure messages,
// and stopping it with SIGTERM, then SIGKILL after a grace period.
package proc
