package protomodel

import (
	"os"
	"strings"
	"testing"
)

// long is the wider scope of make verify-protocol.
var long = os.Getenv("CHAINVOL_MODEL_LONG") == "1"

// mustFind asserts that the checker finds a counterexample want accepts in
// sc, and logs it with the run's counts.
func mustFind(t *testing.T, sc Scope, want Target) *Violation {
	t.Helper()
	r := Check(sc, want, 0)
	logResult(t, r)
	if r.Violation == nil {
		t.Fatalf("no counterexample found in %s (complete=%v)", r.Scope, r.Complete)
	}
	t.Logf("counterexample (%s: %s):\n  %s", r.Violation.Kind, r.Violation.Detail, strings.Join(r.Violation.Trace, "\n  "))
	return r.Violation
}

func logResult(t *testing.T, r Result) {
	t.Helper()
	t.Logf("%s: %d states, %d moves, depth %d, complete=%v, %.2fs", r.Scope, r.States, r.Edges, r.MaxDepth, r.Complete, r.Elapsed.Seconds())
}

// (a) A gc checks its lease, then pauses before its DELETE of an orphan
// block; its lock ages past the TTL, a writer judges it stale, stores the
// same digest, commits and is ready; then the DELETE lands.
func TestV2GCDeleteAfterLeaseCheck(t *testing.T) {
	mustFind(t, LateDeleteScope(V2, long), func(kind string, f uint16) bool {
		return kind == LostBlock && f&(FlagClockStep|FlagResurrect) == 0
	})
}

// (a) The same window in dropEmptyChain: the config's DELETE lands after a
// backup opened it and became ready.
func TestV2DropEmptyChainAfterLeaseCheck(t *testing.T) {
	mustFind(t, DropConfigScope(V2, long), func(kind string, f uint16) bool {
		return kind == LostConfig && f&FlagConfigDeleted != 0 && f&FlagClockStep == 0
	})
}

// (b) A refresher's HEAD sees its lock, the gc deletes the lock as
// abandoned, the refresher's PUT recreates it, and the writer's
// post-commit check passes while the gc freed its blocks. Every gc DELETE
// lands within the gc's lease: the lease logic alone lets it happen.
func TestV2RefresherResurrectsLock(t *testing.T) {
	mustFind(t, ClockStepScope(V2, 0, long), func(kind string, f uint16) bool {
		return kind == LostBlock && f&FlagResurrect != 0 && f&FlagLateDelete == 0
	})
}

// (c) A forward step of the store's clock makes a running gc's lock look
// dead to a writer; the gc, whose lease still holds by its own clock,
// deletes an orphan digest the writer stored again.
func TestV2ClockStepHidesGCLock(t *testing.T) {
	mustFind(t, ClockStepScope(V2, 1, long), func(kind string, f uint16) bool {
		return kind == LostBlock && f&FlagClockStep != 0 && f&(FlagResurrect|FlagLateDelete) == 0
	})
}

// (d) A store without If-None-Match: two writers create the config at
// once; one signs a ready backup with a config the other then replaces.
func TestV2NoIfNoneMatchReplacesConfig(t *testing.T) {
	mustFind(t, NoIfNoneMatchScope(V2, long), func(kind string, f uint16) bool {
		return kind == LostConfig && f&FlagConfigReplaced != 0
	})
}
