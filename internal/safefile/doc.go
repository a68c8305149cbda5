// Package safefile reads and writes the files the gateway keeps for itself
// and shares with other processes of the same user: private directories
// (0700, ours, checked), atomic and exclusive writes (a temporary file
// fsynced and renamed, mode 0600, never through a symlink), capped reads
// that follow no symlink and never block on a FIFO, secret files (no
// permission bits for group or others), exclusive lock files, and why a
// directory cannot be a private one (UsableDir, with what to do). Its
// errors are *fs.PathError values wrapping the sentinels below, so callers
// match them with errors.Is. It imports nothing of ours.
package safefile
