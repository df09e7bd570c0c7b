package protomodel

// GC pcs both protocols share: the prelude that opens the chain, holds the
// gc lease, deletes abandoned locks, lists the blocks, then the manifests
// (pkg/s3chain gc.go; protocol-v3.md, "GC"). Each version's own pcs start
// at gcOwn, the answer of that LIST of manifests.
const (
	gcOpened = pcRole + iota // GET config answered
	gcHeld                   // gc lease held: list the locks
	gcLocks                  // LIST locks answered
	gcGone                   // deleting abandoned locks
	gcListed                 // LIST blocks answered: B
	gcOwn                    // first version-specific pc: LIST manifests answered
)

// stepGCPrelude runs the prelude's pcs of a gc (either protocol); it
// reports whether pc was one of them. A live writer's lock ends the gc of
// the chain; with Scope.NoLocks it runs as if nobody held a lock.
func stepGCPrelude(s *State, sc *Scope, i int) bool {
	p := &s.p[i]
	switch p.pc {
	case pcStart:
		p.await(opGetCfg, 0, gcOpened)
	case gcOpened:
		if !p.respOK {
			p.pc = pcDone
			return true
		}
		p.hold(s, sc, gcHeld)
	case gcHeld:
		if sc.NoLocks { // as if nobody held a lock
			p.pc, p.gone = gcLocks, 0
			return true
		}
		p.await(opListLocks, 0, gcLocks)
	case gcLocks:
		if p.respOK { // a live writer: skip the chain
			p.release(pcDone)
			return true
		}
		p.idx, p.pc = 0, gcGone
		nextGoneLock(p, gcListed)
	case gcGone:
		nextGoneLock(p, gcListed)
	case gcListed:
		p.await(opListMans, 0, gcOwn)
	default:
		return false
	}
	return true
}

// nextGoneLock DELETEs the next abandoned lock, then LISTs the blocks and
// continues at next.
func nextGoneLock(p *proc, next uint8) {
	for j := int(p.idx); j < maxProcs; j++ {
		if p.gone&(1<<j) != 0 {
			p.idx = uint8(j + 1)
			p.issue(opDelLock, uint8(j))
			return
		}
	}
	p.await(opListBlocks, 0, next)
}
