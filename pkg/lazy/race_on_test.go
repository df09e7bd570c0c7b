//go:build race

package lazy

// raceOn: the race detector is on, and sync.Pool drops a quarter of what
// is put back (on purpose, to shake out reuse bugs).
const raceOn = true
