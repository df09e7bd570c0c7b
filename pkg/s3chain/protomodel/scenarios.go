package protomodel

// The scopes below are the configurations the tests run: each v2 defect
// has one in which the checker finds it, and v3 must survive all of them.
// long widens them (CHAINVOL_MODEL_LONG=1): more time, more processes.

// LateDeleteScope: a gc paused between its lease check and its DELETE of
// an orphan block while a writer stores that digest again.
func LateDeleteScope(p Protocol, long bool) Scope {
	sc := Scope{Name: "late-delete", Protocol: p, Writers: []WriterSpec{{Digests: 1}}, GCs: 1, Atomic: true,
		Config: true, Orphans: 1, TTL: 4, MaxTime: 4, Tries: 1, Rounds: 2, Refresh: 1}
	if long {
		sc.MaxTime, sc.Tries, sc.Orphans, sc.Refresh = 5, 2, 3, 2
		sc.Writers = []WriterSpec{{Digests: 3}}
	}
	return sc
}

// DropConfigScope: dropEmptyChain paused between its lease check and its
// DELETE of the config of a chain with no backup yet.
func DropConfigScope(p Protocol, long bool) Scope {
	sc := Scope{Name: "drop-config", Protocol: p, Writers: []WriterSpec{{Digests: 1}}, GCs: 1, Atomic: true,
		Config: true, TTL: 4, MaxTime: 4, Tries: 1, Rounds: 2, Refresh: 1}
	if long {
		sc.MaxTime, sc.Tries, sc.Refresh = 6, 2, 2
	}
	return sc
}

// ClockStepScope: the store's clock steps forward once; with orphans the
// gc's lock looks dead to a writer, without them a writer's lock looks
// dead to the gc (where a refresher may resurrect it).
func ClockStepScope(p Protocol, orphans uint8, long bool) Scope {
	sc := Scope{Name: map[bool]string{true: "clock-step-gc-lock", false: "clock-step-writer-lock"}[orphans != 0], Protocol: p, Writers: []WriterSpec{{Digests: 1}}, GCs: 1, Atomic: true,
		Config: true, Orphans: orphans, TTL: 4, MaxTime: 2, Steps: 1, Tries: 1, Rounds: 2, Refresh: 1}
	if long {
		sc.MaxTime, sc.Tries, sc.Refresh = 3, 2, 2
	}
	return sc
}

// NoIfNoneMatchScope: two writers create the chain on a store that
// ignores If-None-Match.
func NoIfNoneMatchScope(p Protocol, long bool) Scope {
	sc := Scope{Name: "config-race-no-if-none-match", Protocol: p, Writers: []WriterSpec{{Digests: 1}, {Digests: 2}},
		TTL: 4, MaxTime: 1, Tries: 1, Rounds: 2, Refresh: 1}
	if long { // a third writer; more time only deepens what the search must undo first
		sc.Writers = append(sc.Writers, WriterSpec{Digests: 1})
	}
	return sc
}

// CombinedScope: two writers (one reusing every block of the initial
// backup, which a deleter deletes, one storing an orphan digest again and
// a new one), a gc that may give up waiting for a DELETE and a kill, on a
// store with or without If-None-Match; long adds a refresh per lease.
func CombinedScope(p Protocol, atomic, long bool) Scope {
	sc := Scope{Name: "combined", Protocol: p, Writers: []WriterSpec{{Digests: 3, Parent: true}, {Digests: 6}},
		GCs: 1, Deleter: true, Atomic: atomic, Config: true, Initial: 3, Orphans: 4, TTL: 4, MaxTime: 1,
		Kills: 1, Tries: 1, Rounds: 2, AbandonG: true}
	if !atomic {
		sc.Name += "-no-if-none-match"
	}
	if long {
		sc.Refresh = 1
	}
	return sc
}

// LocklessScope: v3 with no lock at all, so that gcs and writers overlap
// in every way (v3 decides nothing about data by its locks, so this covers
// every lock hazard at once); long allows a second kill.
func LocklessScope(m Mutant, long bool) Scope {
	sc := CombinedScope(V3, true, false)
	sc.Name, sc.NoLocks, sc.MaxTime, sc.Mutant = "lockless", true, 0, m
	if long {
		sc.Kills = 2
	}
	return sc
}

// TwoGCScope: lockless, two gcs beside one writer that reuses a block of
// the initial backup (being deleted) and stores an orphan digest again.
func TwoGCScope() Scope {
	sc := LocklessScope(Faithful, false)
	sc.Name, sc.GCs, sc.Writers = "lockless-two-gcs", 2, []WriterSpec{{Digests: 6, Parent: true}}
	return sc
}

// defectScopes are the scopes of the four v2 defects.
func defectScopes(p Protocol, long bool) []Scope {
	return []Scope{LateDeleteScope(p, long), DropConfigScope(p, long), ClockStepScope(p, 0, long),
		ClockStepScope(p, 1, long), NoIfNoneMatchScope(p, long)}
}

// V3Scopes are the scopes the v3 protocol must survive: every v2 defect's
// scope, each also with a kill and a gc that gives up on DELETEs, the
// If-None-Match race on a store that honours it, and the combined ones.
func V3Scopes(long bool) []Scope {
	out := defectScopes(V3, long)
	for _, sc := range defectScopes(V3, false) { // the wide ones would not finish
		if long {
			sc.Refresh = 2
		}
		sc.Name += "+kill+abandon"
		sc.Kills, sc.AbandonG = 1, true
		out = append(out, sc)
	}
	race := NoIfNoneMatchScope(V3, long)
	race.Name, race.Atomic = "config-race", true
	out = append(out, race, CombinedScope(V3, true, long), CombinedScope(V3, false, long), LocklessScope(Faithful, long))
	if long {
		out = append(out, TwoGCScope())
	}
	return out
}

// ListedScope: the lockless combined scope checking "listed ⇒ restorable"
// (instances 1 and 2 of FORMAT.md §7.5: a kill lets a commit land late, or
// stops a writer between commit and confirm), with or without state
// records; long allows a second kill.
func ListedScope(ready, long bool) Scope {
	sc := LocklessScope(Faithful, long)
	sc.Name, sc.Ready, sc.CheckListed = "listed", ready, true
	if ready {
		sc.Name += "+ready"
	}
	return sc
}

// ReuseScope: instance 3 of FORMAT.md §7.5: w0 fails its confirm (no
// round may PUT: a gc that doomed its orphan block makes it give up), a
// deleter deletes w0's id, w1 reuses it; lockless.
func ReuseScope(ready bool) Scope {
	sc := Scope{Name: "id-reuse", Protocol: V3, Writers: []WriterSpec{{Digests: 1}, {Digests: 2, Slot: 1}},
		GCs: 1, Deleter: true, DeleteSlot: 1, Atomic: true, Config: true, Orphans: 1, TTL: 4, Tries: 1,
		Rounds: 0, NoLocks: true, Ready: ready, CheckListed: true}
	if ready {
		sc.Name += "+ready"
	}
	return sc
}

// ReadyScopes are the scopes the protocol with state records must survive:
// the listed one (the lockless combined scope), id reuse and the combined
// one with locks; long adds every other v3 scope (each with state records
// and the listed invariant on).
func ReadyScopes(long bool) []Scope {
	out := []Scope{ListedScope(true, long), ReuseScope(true)}
	for _, sc := range V3Scopes(false) {
		if sc.NoLocks || !(sc.Name == "combined" || long) {
			continue // lockless: ListedScope
		}
		sc.Name += "+ready"
		sc.Ready, sc.CheckListed = true, true
		out = append(out, sc)
	}
	return out
}
