// Package jsonx encodes JSON as the peers spell it: no HTML escaping of <, >
// and &, as JSON.stringify does, and no trailing newline; and it refuses JSON
// text that repeats a key, which encoding/json would silently resolve. It
// imports nothing of ours.
package jsonx
