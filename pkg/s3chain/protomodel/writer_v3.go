package protomodel

// Writer pcs of protocol v3 (protocol-v3.md, "Writer").
const (
	w3Opened      = pcRole + iota // GET config answered
	w3Created                     // PUT config If-None-Match answered
	w3Reread                      // GET config answered
	w3Held                        // writer lease held (progress only)
	w3Locks                       // LIST locks answered
	w3Retry                       // released after finding a live gc lock
	w3Parent                      // GET parent manifest answered
	w3Blocks                      // uploading blocks at gen-0 keys
	w3Committed                   // manifest created: confirm round starts
	w3Dooms                       // LIST doom records answered
	w3Doom                        // GET doom record answered
	w3Keys                        // LIST block keys answered
	w3Puts                        // PUTting uncovered digests
	w3Retracted                   // DELETE own manifest answered
	w3Fail                        // released: give up
	w3Marked                      // ready record PutIfAbsent answered (Scope.Ready)
	w3RetractRead                 // GET own manifest answered (a retract of a shared slot)
)

// stepWriterV3 is one step of a v3 backup.
func stepWriterV3(s *State, sc *Scope, i int) {
	p := &s.p[i]
	switch p.pc {
	case pcStart:
		p.await(opGetCfg, 0, w3Opened)
	case w3Opened:
		switch {
		case p.respOK:
			p.opened(s, sc, w3Held)
		case !sc.Atomic: // refused: the store cannot create atomically
			p.pc, p.failed = pcDone, true
		default:
			p.await(opPutCfgIfAbsent, s.newConfig(), w3Created)
		}
	case w3Created:
		p.await(opGetCfg, 0, w3Reread)
	case w3Reread:
		p.opened(s, sc, w3Held)
	case w3Held:
		if sc.NoLocks { // as if nobody held a lock
			p.pc = w3Locks
			return
		}
		p.await(opListLocks, 0, w3Locks)
	case w3Locks:
		switch {
		case p.respOK:
			p.release(w3Retry)
		case sc.Writers[i].Parent:
			p.await(opGetMan, 0, w3Parent)
		default:
			p.pc = w3Blocks
			nextBlockV3(s, sc, i)
		}
	case w3Retry:
		p.retry(s, sc, w3Held)
	case w3Parent:
		if p.respOK {
			p.skip = p.respVal
		}
		p.pc = w3Blocks
		nextBlockV3(s, sc, i)
	case w3Blocks:
		nextBlockV3(s, sc, i)
	default:
		stepConfirm(s, sc, i)
	}
}

// nextBlockV3 PUTs the next changed block at its gen-0 key, then creates
// the manifest with PutIfAbsent (refused on a store without it).
func nextBlockV3(s *State, sc *Scope, i int) {
	p := &s.p[i]
	for d := int(p.idx); d < maxDig; d++ {
		if (sc.Writers[i].Digests&^p.skip)&(1<<d) != 0 {
			p.idx = uint8(d + 1)
			p.issue(opPutBlock, uint8(key(d, 0)))
			return
		}
	}
	if !sc.Atomic {
		p.release(w3Fail)
		return
	}
	p.await(opPutManIfAbsent, uint8(sc.slot(i)), w3Committed)
}
