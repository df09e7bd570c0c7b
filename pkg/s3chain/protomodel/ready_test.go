package protomodel

import "testing"

// The protocol before state records lists every manifest: the checker
// finds a listed backup that does not restore in each instance of
// FORMAT.md §7.5 (the flags of the schedule say which).

// Instance 1: a writer's manifest create lands after the writer is gone
// (killed while it was on the wire); a gc had freed its blocks.
func TestReadyOldLateCommitListed(t *testing.T) {
	mustFind(t, ListedScope(false, false), func(kind string, f uint16) bool {
		return kind == LostListed && f&FlagLateCommit != 0
	})
}

// Instance 2: a writer killed after its commit, before its confirm ended.
func TestReadyOldKilledUnreadyListed(t *testing.T) {
	mustFind(t, ListedScope(false, false), func(kind string, f uint16) bool {
		return kind == LostListed && f&FlagKilledUnready != 0 && f&FlagLateCommit == 0
	})
}

// Instance 3: a failed writer's retraction (GET, compare, DELETE) pauses
// before its DELETE; the backup is deleted and its id reused by a ready
// backup, which the late DELETE removes.
func TestReadyOldRetractRemovesReused(t *testing.T) {
	mustFind(t, ReuseScope(false), func(kind string, f uint16) bool {
		return kind == LostManifest && f&FlagWrongRetract != 0
	})
}

// TestReadyMutantsFail shows the search with state records has teeth: a
// writer that ignores the void record deciding its id, and a delete that
// does not make sure its id has a record first, are each found.
func TestReadyMutantsFail(t *testing.T) {
	sc := ListedScope(true, false)
	sc.Mutant = ReadyIgnoresVoid
	t.Run("ready-ignores-void", func(t *testing.T) { mustFind(t, sc, nil) })
	re := ReuseScope(true)
	re.Mutant = DeleteWithoutVoid
	t.Run("delete-without-void", func(t *testing.T) {
		mustFind(t, re, func(kind string, f uint16) bool { return f&FlagWrongDelete != 0 })
	})
}

// TestReadySafe explores every schedule of the scopes above with state
// records: no listed backup fails to restore, no ready one is lost, no
// DELETE of a manifest removes another than the one meant.
func TestReadySafe(t *testing.T) { mustBeSafe(t, ReadyScopes(long)) }
