//go:build !linux

package safefile

func renameNoReplace(dfd int, old, new string) error { return linkNoReplace(dfd, old, new) }
