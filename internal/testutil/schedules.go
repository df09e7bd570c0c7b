package testutil

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// Schedules reads how many random schedules an interleaving or kill test
// runs, CHAINVOL_SCHEDULES (default def), and its first seed,
// CHAINVOL_SEED (default from the clock; schedule i uses SEED+i, so a
// failing one is replayed by setting both). A malformed value fails t.
func Schedules(t testing.TB, def int) (int, uint64) {
	t.Helper()
	n, seed := def, uint64(time.Now().UnixNano()%1_000_000)
	if v := os.Getenv("CHAINVOL_SCHEDULES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("CHAINVOL_SCHEDULES=%q: want a positive number", v)
		}
	}
	if v := os.Getenv("CHAINVOL_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("CHAINVOL_SEED=%q: %v", v, err)
		}
	}
	return n, seed
}

// RunSchedules runs fn as a subtest for each of Schedules(t, def)'s
// seeds, stopping at the first that fails with how to replay it alone.
func RunSchedules(t *testing.T, def int, fn func(t *testing.T, seed uint64)) {
	t.Helper()
	n, seed := Schedules(t, def)
	for i := range n {
		s := seed + uint64(i)
		if !t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) { fn(t, s) }) {
			t.Logf("rerun alone with CHAINVOL_SEED=%d CHAINVOL_SCHEDULES=1", s)
			return
		}
	}
	t.Logf("%d schedules, first seed %d", n, seed)
}
