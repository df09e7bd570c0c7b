package protomodel

// stepConfirm runs the v3 writer's CONFIRM rounds: doom records, then
// block keys, then a PUT of every uncovered digest; a round that PUTs
// nothing makes the backup ready.
func stepConfirm(s *State, sc *Scope, i int) {
	p := &s.p[i]
	switch p.pc {
	case w3Committed:
		p.round = 0
		startRound(p)
	case w3Dooms, w3Doom:
		if p.pc == w3Dooms {
			p.idx = 0
		}
		p.pc = w3Doom
		if !nextDoom(p) {
			p.issue(opListBlocks, 0)
			p.pc = w3Keys
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
			p.issue(opDelMan, uint8(i+1))
			p.pc = w3Retracted
			return
		}
		p.idx, p.allOK, p.pc = 0, false, w3Puts
		nextUncovered(s, i)
	case w3Puts:
		nextUncovered(s, i)
	case w3Retracted:
		p.release(w3Fail)
	case w3Fail:
		p.pc, p.failed = pcDone, true
	}
}

// startRound begins a confirm round: LIST the doom records.
func startRound(p *proc) {
	p.doomed = 0
	p.issue(opListDooms, 0)
	p.pc = w3Dooms
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
func nextUncovered(s *State, i int) {
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
	if !p.allOK { // nothing PUT: every digest is covered
		p.ready = true
		p.release(pcDone)
		return
	}
	p.round++
	startRound(p)
}
