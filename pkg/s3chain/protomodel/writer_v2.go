package protomodel

// Writer pcs of protocol v2 (pkg/s3chain backup.go, backup_job.go,
// config.go, lease.go).
const (
	w2Opened    = pcRole + iota // GET config answered
	w2NAStat                    // store without If-None-Match: HEAD config answered
	w2Created                   // config write answered: read it back
	w2Reread                    // GET config answered (after a create)
	w2Held                      // writer lease held: list the locks
	w2Locks                     // LIST locks answered
	w2Retry                     // released after finding a live gc lock
	w2Checked                   // checkConfig: GET config answered
	w2Parent                    // GET parent manifest answered
	w2Blocks                    // uploading blocks
	w2Check2                    // createManifest's checkConfig (no If-None-Match)
	w2Committed                 // manifest write answered
	w2HeldLock                  // post-commit HEAD own lock answered
	w2Retract                   // GET own manifest answered
	w2Retracted                 // DELETE own manifest answered
	w2Fail                      // released: give up
)

// stepWriterV2 is one step of a v2 backup.
func stepWriterV2(s *State, sc *Scope, i int) {
	p := &s.p[i]
	w := sc.Writers[i]
	switch p.pc {
	case pcStart:
		p.await(opGetCfg, 0, w2Opened)
	case w2Opened:
		switch {
		case p.respOK:
			p.opened(s, sc, w2Held)
		case sc.Atomic:
			p.await(opPutCfgIfAbsent, s.newConfig(), w2Created)
		default: // createConfigNotAtomic: HEAD, then PUT if absent
			p.await(opStatCfg, 0, w2NAStat)
		}
	case w2NAStat:
		if !p.respOK {
			p.await(opPutCfg, s.newConfig(), w2Created)
			return
		}
		fallthrough
	case w2Created:
		p.await(opGetCfg, 0, w2Reread)
	case w2Reread:
		if !p.respOK { // dropped by a gc meanwhile: the backup fails
			p.pc, p.failed = pcDone, true
			return
		}
		p.opened(s, sc, w2Held)
	case w2Held:
		p.await(opListLocks, 0, w2Locks)
	case w2Locks:
		if p.respOK { // a live gc lock: wait and retry
			p.release(w2Retry)
			return
		}
		p.await(opGetCfg, 0, w2Checked)
	case w2Retry:
		p.retry(s, sc, w2Held)
	default:
		stepWriterV2Commit(s, sc, i, w)
	}
}

// stepWriterV2Commit runs the rest: config check, blocks, commit, check.
func stepWriterV2Commit(s *State, sc *Scope, i int, w WriterSpec) {
	p := &s.p[i]
	switch p.pc {
	case w2Checked:
		if !p.respOK || p.respVal != p.cfgVer {
			p.release(w2Fail)
			return
		}
		if w.Parent {
			p.await(opGetMan, 0, w2Parent)
			return
		}
		p.pc = w2Blocks
		nextBlockV2(s, sc, i, w)
	case w2Parent:
		if p.respOK {
			p.skip = p.respVal
		}
		p.pc = w2Blocks
		nextBlockV2(s, sc, i, w)
	case w2Blocks:
		nextBlockV2(s, sc, i, w)
	case w2Check2:
		if !p.respOK || p.respVal != p.cfgVer {
			p.release(w2Fail)
			return
		}
		p.await(opPutMan, uint8(i+1), w2Committed)
	case w2Committed:
		if !p.valid(s) {
			retractV2(p, i)
			return
		}
		p.await(opStatLock, 0, w2HeldLock)
	case w2HeldLock:
		if !p.respOK || !p.valid(s) {
			retractV2(p, i)
			return
		}
		p.ready = true
		p.release(pcDone)
	case w2Retract:
		if p.respOK {
			p.await(opDelMan, uint8(i+1), w2Retracted)
			return
		}
		fallthrough
	case w2Retracted:
		p.release(w2Fail)
	case w2Fail:
		p.pc, p.failed = pcDone, true
	}
}

// nextBlockV2 PUTs the next block the parent does not have, or commits:
// lease check, then the manifest (PutIfAbsent, or checkConfig and PUT).
func nextBlockV2(s *State, sc *Scope, i int, w WriterSpec) {
	p := &s.p[i]
	for d := int(p.idx); d < maxDig; d++ {
		if (w.Digests&^p.skip)&(1<<d) != 0 {
			p.idx = uint8(d + 1)
			p.issue(opPutBlock, uint8(key(d, 0)))
			return
		}
	}
	p.idx = maxDig
	switch {
	case !p.valid(s):
		p.release(w2Fail)
	case sc.Atomic:
		p.await(opPutManIfAbsent, uint8(i+1), w2Committed)
	default:
		p.await(opGetCfg, 0, w2Check2)
	}
}

// retractV2 deletes the writer's own manifest if it is stored.
func retractV2(p *proc, i int) {
	p.await(opGetMan, uint8(i+1), w2Retract)
}

// newConfig draws the version (the secret) of a config about to be made.
func (s *State) newConfig() uint8 {
	v := s.st.nextCfg
	s.st.nextCfg++
	return v
}
