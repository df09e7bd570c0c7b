//go:build !race

package lazy

// raceOn: the race detector is off (race_on_test.go).
const raceOn = false
