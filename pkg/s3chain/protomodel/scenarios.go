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
		sc.MaxTime, sc.Tries, sc.Orphans, sc.Refresh = 6, 2, 3, 2
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
	sc := Scope{Name: "clock-step", Protocol: p, Writers: []WriterSpec{{Digests: 1}}, GCs: 1, Atomic: true,
		Config: true, Orphans: orphans, TTL: 4, MaxTime: 2, Steps: 1, Tries: 1, Rounds: 2, Refresh: 1}
	if long {
		sc.MaxTime, sc.Tries, sc.Refresh = 5, 2, 2
	}
	return sc
}

// NoIfNoneMatchScope: two writers create the chain on a store that
// ignores If-None-Match.
func NoIfNoneMatchScope(p Protocol, long bool) Scope {
	sc := Scope{Name: "no-if-none-match", Protocol: p, Writers: []WriterSpec{{Digests: 1}, {Digests: 2}},
		TTL: 4, MaxTime: 1, Tries: 1, Rounds: 2, Refresh: 1}
	if long {
		sc.MaxTime, sc.Refresh = 3, 2
		sc.Writers = append(sc.Writers, WriterSpec{Digests: 1})
	}
	return sc
}
