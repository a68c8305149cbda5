//go:build race

package wire

// raceOn: the race detector makes sync.Pool drop what it is given, so
// allocations are not counted under it.
const raceOn = true
