package protomodel

// stepConfirm runs the v3 writer's CONFIRM rounds: doom records, then
// block keys, then a PUT of every uncovered digest; a round that PUTs
// nothing makes the backup ready.
func stepConfirm(s *State, sc *Scope, i int) {
	p := &s.p[i]
	switch p.pc {
	case w3Committed:
		if !p.respOK { // the id is taken: ErrBackupExists
			p.release(w3Fail)
			return
		}
		p.round = 0
		startRound(p)
	case w3Dooms, w3Doom:
		if p.pc == w3Dooms {
			p.idx = 0
		}
		p.pc = w3Doom
		if !nextDoom(p) {
			p.await(opListBlocks, 0, w3Keys)
		}
	case w3Keys:
		if sc.Mutant == IgnoreDooms {
			p.doomed = 0
		}
		p.ref1 = 0 // uncovered digests
		digs := sc.Writers[i].Digests
		for d := range maxDig {
			if digs&(1<<d) != 0 && p.keys&^p.doomed&digKeys(d) == 0 {
				p.ref1 |= 1 << d
			}
		}
		if p.ref1 != 0 && p.round >= sc.Rounds { // too busy: never ready
			retractV3(p, sc, i)
			return
		}
		p.idx, p.allOK, p.pc = 0, false, w3Puts
		nextUncovered(s, sc, i)
	case w3Puts:
		nextUncovered(s, sc, i)
	case w3RetractRead:
		if p.respOK && p.respBy == uint8(i+1) {
			p.await(opDelMan, uint8(sc.slot(i)), w3Retracted)
			return
		}
		p.release(w3Fail)
	case w3Retracted:
		p.release(w3Fail)
	case w3Marked:
		if p.respOK || sc.Mutant == ReadyIgnoresVoid {
			p.ready = true
			p.release(pcDone)
			return
		}
		p.release(w3Fail)
	case w3Fail:
		p.pc, p.failed = pcDone, true
	}
}

// retractV3 is a failing writer's retraction: none with state records
// (its manifest stays unready); else a DELETE of its manifest, after a
// GET comparing it with its own when another writer may use the slot.
func retractV3(p *proc, sc *Scope, i int) {
	switch {
	case sc.Ready:
		p.release(w3Fail)
	case sc.shared(sc.slot(i)):
		p.await(opGetMan, uint8(sc.slot(i)), w3RetractRead)
	default:
		p.await(opDelMan, uint8(i+1), w3Retracted)
	}
}

// startRound begins a confirm round: LIST the doom records.
func startRound(p *proc) {
	p.doomed = 0
	p.await(opListDooms, 0, w3Dooms)
}

// nextDoom GETs the next listed doom record.
func nextDoom(p *proc) bool {
	for j := int(p.idx); j < maxProcs; j++ {
		if p.dooms&(1<<j) != 0 {
			p.idx = uint8(j + 1)
			p.issue(opGetDoom, uint8(j))
			return true
		}
	}
	return false
}

// nextUncovered PUTs the next uncovered digest at its gen-0 key unless that
// is doomed, else at a fresh variant key; after the last, the round ends.
func nextUncovered(s *State, sc *Scope, i int) {
	p := &s.p[i]
	for d := int(p.idx); d < maxDig; d++ {
		if p.ref1&(1<<d) == 0 {
			continue
		}
		k := key(d, 0)
		if p.doomed&(1<<k) != 0 {
			k = key(d, 1+i*maxRounds+int(p.round))
		}
		p.idx, p.allOK = uint8(d+1), true
		p.issue(opPutBlock, uint8(k))
		return
	}
	if !p.allOK && sc.Ready { // covered: the ready record decides
		p.await(opPutStateIfAbsent, uint8(sc.slot(i)), w3Marked)
		return
	}
	if !p.allOK { // nothing PUT: every digest is covered
		p.ready = true
		p.release(pcDone)
		return
	}
	p.round++
	startRound(p)
}
