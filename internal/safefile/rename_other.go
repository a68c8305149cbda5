//go:build !linux

package uds

func renameNoReplace(dfd int, old, new string) error { return linkNoReplace(dfd, old, new) }
