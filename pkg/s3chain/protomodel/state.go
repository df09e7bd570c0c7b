package protomodel

// Bounds of the fixed-size arrays a State is made of (a State must be a
// comparable value: it is hashed whole for the visited set).
const (
	maxProcs  = 5 // writers, gcs and deleters together
	maxSlots  = 4 // manifest slots: 0 is the initial backup, 1+w writer w's
	maxDig    = 3 // block digests
	maxRounds = 2 // v3 confirm rounds that may PUT (the next one must not)
	// keysPerDig: the gen-0 key and one variant per writer and round.
	keysPerDig = 1 + (maxSlots-1)*maxRounds
)

// Role is what a process runs.
type Role uint8

// Roles of processes.
const (
	Writer  Role = iota + 1 // a backup
	GC                      // a garbage collection of the chain
	Deleter                 // the delete of the initial backup
)

// req is one store request: op and its arguments.
type req struct {
	op  op
	arg uint8
}

// refresher is the lease-refreshing goroutine of a process.
type refresher struct {
	pc    uint8
	start int8 // real time the running refresh started
	last  int8 // real time the last refresh started (one per tick)
	pend  req
	resp  bool  // last answer: the lock existed (Stat)
	count uint8 // refreshes started
}

// proc is one process: its main thread, its refresher and its locals.
type proc struct {
	pc, ret  uint8 // ret: where a hold or release sub-machine returns
	dead     bool
	ready    bool // a writer reported its backup ready
	failed   bool // it gave up (never reported ready)
	pend     req  // the main thread's request in flight
	orphan   req  // a request it abandoned (or a killed refresher's) that may still land
	respOK   bool // last answer: object existed / busy
	respVal  uint8
	respMT   int8
	start    int8 // real time the lease's first write started
	server   int8 // store ModTime of its lock's first write
	until    int8 // lease valid until this real time
	lost     bool
	hasLease bool
	ref      refresher
	cfgVer   uint8  // the config version it opened
	skip     uint8  // digests a writer takes from its parent
	idx      uint8  // loop index
	round    uint8  // v3 confirm round
	tries    uint8  // lock attempts
	allOK    bool   // v3 gc: every DELETE answered
	mans     uint8  // manifest slots listed
	ref0     uint8  // digests referenced (first read)
	ref1     uint8  // digests referenced (second read)
	keys     uint32 // block keys: listed (gc), or existing S (v3 writer)
	doomed   uint32 // v3: keys in doom records (writer X), doom set (gc C)
	dooms    uint8  // v3 writer: doom records listed (by gc process)
	gone     uint8  // v2 gc: abandoned locks to delete (by process)
	deleted  uint8  // v2 gc: block deletes issued
	// State records (Scope.Ready):
	respBy   uint8  // last answer: the writer of the manifest read (GET manifest)
	gone0    bool   // a writer's ready backup was deleted by a delete meant for it
	seenDigs uint16 // gc: digests of each slot's manifest read (3 bits a slot)
	seenBy   uint8  // gc: its writer (2 bits a slot); deleter: the one it means
	readSet  uint8  // gc: slots whose manifest it read
	deadSet  uint8  // gc: slots it found dead
	pendSet  uint8  // gc: slots it found unready (to void)
}

// manifest is one stored manifest.
type manifest struct {
	exists bool
	digs   uint8 // digests it lists
	cfgVer uint8 // config it was signed with
	by     uint8 // its writer: 1+w; 0 the initial backup
}

// record is the state record of one slot (FORMAT.md §7.5): created once
// with PutIfAbsent, never changed or deleted.
type record struct {
	state uint8 // recNone, recReady or recVoid
	by    uint8 // recReady: the writer of the manifest it names
}

// States of a record.
const (
	recNone uint8 = iota
	recReady
	recVoid
)

// lock is one stored lock object pending/E/KIND-TOKEN.json.
type lock struct {
	exists bool
	mt     int8 // store ModTime
}

// doom is one stored v3 doom record.
type doom struct {
	exists bool
	keys   uint32
}

// storeState is the abstract object store of one chain.
type storeState struct {
	cfg     uint8 // config version (its secret); 0: absent
	nextCfg uint8
	blocks  uint32 // existing block keys
	mans    [maxSlots]manifest
	recs    [maxSlots]record
	locks   [maxProcs]lock
	dooms   [maxProcs]doom
}

// Flags record notable events of a schedule, so that a test can ask for a
// counterexample of one particular defect.
const (
	FlagResurrect      uint16 = 1 << iota // a refresher's Put recreated a deleted lock
	FlagLateDelete                        // a gc DELETE landed after its lease expired
	FlagClockStep                         // the store's clock stepped forward
	FlagConfigReplaced                    // a config was overwritten by another
	FlagConfigDeleted                     // a config was deleted
	FlagLateCommit                        // a manifest's create landed after its writer died
	FlagKilledUnready                     // a writer died with its manifest created, not ready
	FlagWrongDelete                       // a manifest DELETE removed another manifest than its sender meant
	FlagWrongRetract                      // ... and its sender was a writer retracting its own
)

// State is one state of the model: a comparable value.
type State struct {
	real     int8 // real time: every actor's monotonic clock
	offset   int8 // the store's clock is real+offset
	steps    int8 // clock steps left
	kills    int8 // kills left
	flags    uint16
	deleted0 bool // the delete of the initial backup was issued
	st       storeState
	p        [maxProcs]proc
}

// now is the store's clock.
func (s *State) now() int8 { return s.real + s.offset }
