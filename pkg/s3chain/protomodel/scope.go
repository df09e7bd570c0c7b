package protomodel

import "fmt"

// Protocol selects the rules the processes follow.
type Protocol uint8

// Protocols.
const (
	V2 Protocol = 2 // leases decide safety (the old pkg/s3chain)
	V3 Protocol = 3 // doom records and confirm rounds (protocol-v3.md)
)

// WriterSpec is one backup: the digests of its volume image and whether it
// builds on the initial backup (its blocks are then not uploaded again).
type WriterSpec struct {
	Digests uint8 // bit d: digest d
	Parent  bool
	// Slot is the manifest slot (backup id) it commits to: 0 its own (1+w);
	// another writer's slot is that writer's explicit id reused.
	Slot uint8
}

// Scope bounds one model: processes, initial store and adversary.
type Scope struct {
	Name     string
	Protocol Protocol
	Writers  []WriterSpec
	GCs      int
	Deleter  bool  // one process deletes the initial backup
	Atomic   bool  // the store honours If-None-Match
	Config   bool  // the chain's config exists initially
	Initial  uint8 // digests of an initial ready backup (0: none)
	Orphans  uint8 // digests stored initially that no manifest lists
	TTL      int8  // lease TTL in ticks; validity is TTL - TTL/4
	MaxTime  int8  // last tick of real time
	Steps    int8  // forward steps (by TTL) of the store's clock
	Kills    int8  // processes that may be killed
	Tries    uint8 // lock attempts of a writer that finds a live gc lock
	Rounds   uint8 // v3 confirm rounds that may PUT (at most maxRounds)
	AbandonG bool  // v3 gc may give up waiting for a DELETE (it lands later)
	Refresh  uint8 // refreshes a lease may make (0: it only runs out)
	NoLocks  bool  // v3 without any lock: gcs and writers never wait for each other
	Mutant   Mutant
	// Ready (v3 only): state records (FORMAT.md §7.5). A manifest is listed
	// once its ready record names it; writers never retract, gcs void the
	// unready manifests they read (MinAge 0: the worst case) and delete the
	// dead ones, the deleter voids before its DELETE.
	Ready bool
	// CheckListed adds the invariant "every listed backup restores" (a
	// listing shows every manifest without Ready, the ready ones with it).
	CheckListed bool
	// DeleteSlot is the slot the deleter deletes (0: the initial backup). A
	// deleter with Ready or another slot sends its requests one by one (a
	// HEAD, with Ready a void record, the DELETE), each may land late.
	DeleteSlot uint8
}

// slot is the manifest slot writer i commits to.
func (sc *Scope) slot(i int) int {
	if s := sc.Writers[i].Slot; s != 0 {
		return int(s)
	}
	return i + 1
}

// shared tells whether two writers commit to slot (an id reused).
func (sc *Scope) shared(slot int) bool {
	n := 0
	for i := range sc.Writers {
		if sc.slot(i) == slot {
			n++
		}
	}
	return n > 1
}

// stepwiseDeleter tells whether the deleter sends its requests one by one.
func (sc *Scope) stepwiseDeleter() bool { return sc.Ready || sc.DeleteSlot != 0 }

// Mutant is a deliberate break of the v3 protocol, to show that the
// checker would notice one.
type Mutant uint8

// Mutants of v3.
const (
	Faithful       Mutant = iota
	NoSecondRead          // the gc deletes C without reading the manifests again
	IgnoreDooms           // the writer's confirm ignores doom records
	UndoomAfterErr        // the gc removes its doom record although a DELETE went unanswered
	// Mutants of state records (Scope.Ready):
	ReadyIgnoresVoid  // the writer reports ready although a void record decided its id
	DeleteWithoutVoid // a delete sends its DELETE without making sure the id has a record
)

// String names the scope for logs.
func (sc *Scope) String() string {
	return fmt.Sprintf("%s v%d writers=%d gcs=%d deleter=%v atomic=%v locks=%v ttl=%d time=%d steps=%d kills=%d refreshes=%d mutant=%d ready=%v listed=%v",
		sc.Name, sc.Protocol, len(sc.Writers), sc.GCs, sc.Deleter, sc.Atomic, !sc.NoLocks, sc.TTL, sc.MaxTime, sc.Steps, sc.Kills, sc.Refresh, sc.Mutant, sc.Ready, sc.CheckListed)
}

// validity is how long after a refresh starts its holder relies on it.
func (sc *Scope) validity() int8 { return sc.TTL - sc.TTL/4 }

// roles lists the processes: writers, then gcs, then the deleter.
func (sc *Scope) role(i int) Role {
	switch {
	case i < len(sc.Writers):
		return Writer
	case i < len(sc.Writers)+sc.GCs:
		return GC
	case i == len(sc.Writers)+sc.GCs && sc.Deleter:
		return Deleter
	}
	return 0
}

func (sc *Scope) procs() int {
	n := len(sc.Writers) + sc.GCs
	if sc.Deleter {
		n++
	}
	return n
}

// validate panics on a scope the fixed-size state cannot hold.
func (sc *Scope) validate() {
	if sc.procs() > maxProcs || len(sc.Writers) > maxSlots-1 || sc.Rounds > maxRounds || sc.TTL < 2 {
		panic(fmt.Sprintf("protomodel: scope %s is out of bounds", sc))
	}
}

// initial is the state every schedule starts from.
func (sc *Scope) initial() State {
	sc.validate()
	var s State
	s.steps, s.kills = sc.Steps, sc.Kills
	s.st.nextCfg = 1
	if sc.Config {
		s.st.cfg, s.st.nextCfg = 1, 2
	}
	if sc.Initial != 0 {
		s.st.mans[0] = manifest{exists: true, digs: sc.Initial, cfgVer: s.st.cfg}
		if sc.Ready {
			s.st.recs[0] = record{state: recReady, by: 0}
		}
	}
	for d := range maxDig {
		if (sc.Initial|sc.Orphans)&(1<<d) != 0 {
			s.st.blocks |= 1 << key(d, 0)
		}
	}
	return s
}

// key is the bit of digest d's variant v (0: the gen-0 key).
func key(d, v int) uint { return uint(d*keysPerDig + v) }

// digestsOf is the set of digests some key of keys belongs to.
func digestsOf(keys uint32) uint8 {
	var out uint8
	for d := range maxDig {
		if keys&digKeys(d) != 0 {
			out |= 1 << d
		}
	}
	return out
}

// digKeys is the set of all keys of digest d.
func digKeys(d int) uint32 { return (1<<keysPerDig - 1) << (d * keysPerDig) }

// keysOfDigests is the set of all keys of the digests in digs.
func keysOfDigests(digs uint8) uint32 {
	var out uint32
	for d := range maxDig {
		if digs&(1<<d) != 0 {
			out |= digKeys(d)
		}
	}
	return out
}
