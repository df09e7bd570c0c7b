package protomodel

// GC pcs of protocol v2 (pkg/s3chain gc.go).
const (
	g2Mans    = gcOwn + iota // LIST manifests answered
	g2Man                    // GET manifest answered
	g2Sweep                  // deleting unreferenced blocks
	g2Drop                   // dropEmptyChain: LIST manifests answered
	g2Dropped                // DELETE config answered
)

// stepGCV2 is one step of a v2 gc of the chain.
func stepGCV2(s *State, sc *Scope, i int) {
	p := &s.p[i]
	if stepGCPrelude(s, sc, i) {
		return
	}
	switch p.pc {
	case g2Mans, g2Man:
		if p.pc == g2Man && p.respOK {
			p.ref0 |= p.respVal
		}
		if p.pc == g2Mans {
			p.idx = 0
		}
		p.pc = g2Man
		if !nextManifest(p, p.mans) {
			p.idx, p.pc = 0, g2Sweep
			sweepV2(s, i)
		}
	case g2Sweep:
		sweepV2(s, i)
	case g2Drop:
		if p.mans != 0 || !p.valid(s) {
			p.release(pcDone)
			return
		}
		p.await(opDelCfg, 0, g2Dropped)
	case g2Dropped:
		p.release(pcDone)
	}
}

// nextManifest GETs the next listed manifest from slot idx on.
func nextManifest(p *proc, slots uint8) bool { return nextSlot(p, slots, opGetMan) }

// sweepV2 checks the lease and DELETEs the next unreferenced listed block;
// after the last one an empty chain is dropped.
func sweepV2(s *State, i int) {
	p := &s.p[i]
	for k := int(p.idx); k < maxDig*keysPerDig; k++ {
		if p.keys&(1<<k) == 0 || p.ref0&(1<<(k/keysPerDig)) != 0 {
			continue
		}
		if !p.valid(s) {
			p.release(pcDone)
			return
		}
		p.idx = uint8(k + 1)
		p.issue(opDelBlock, uint8(k))
		return
	}
	if p.ref0 != 0 {
		p.release(pcDone)
		return
	}
	p.await(opListMans, 0, g2Drop)
}
