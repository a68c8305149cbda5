// Package bounded holds what keeps another process's data within a cap: a
// map that forgets its oldest entries past a cap (the bookkeeping every leg
// keeps per message, where a send went, whom to answer, what a post was,
// must not grow without bound, and the oldest entry is the one least likely
// to be asked for again), and Clip, which cuts text to a number of runes.
package bounded
