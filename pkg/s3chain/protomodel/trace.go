package protomodel

import (
	"fmt"
	"strings"
)

// render replays path from the initial state and describes every move.
func render(sc *Scope, path []move) []string {
	s := sc.initial()
	out := make([]string, 0, len(path))
	for _, m := range path {
		before := s
		apply(&s, sc, m)
		out = append(out, fmt.Sprintf("t=%d store=%d  %s", s.real, s.now(), describe(sc, &before, &s, m)))
	}
	return out
}

// describe says what move m did, from the states around it.
func describe(sc *Scope, b, a *State, m move) string {
	i := int(m.who)
	n := procName(sc, i)
	pb, pa := &b.p[i], &a.p[i]
	switch m.kind {
	case mTick:
		return "tick"
	case mClock:
		return fmt.Sprintf("the store's clock steps forward by %d", sc.TTL)
	case mKill:
		return n + " is killed"
	case mAbandon:
		return n + " stops waiting for " + reqName(sc, pb.pend) + " (it may still land)"
	case mLand:
		return fmt.Sprintf("%s's %s lands%s%s", n, reqName(sc, pb.pend), events(b, a), then(sc, pb, pa))
	case mLandRef:
		return fmt.Sprintf("%s's refresher: %s lands%s; it %s", n, reqName(sc, pb.ref.pend), events(b, a), refNote(pb, pa))
	case mLandOrphan:
		return fmt.Sprintf("%s's abandoned %s lands%s", n, reqName(sc, pb.orphan), events(b, a))
	case mRefresh:
		return n + "'s refresher " + refNote(pb, pa)
	}
	return n + " " + stepNote(sc, pb, pa)
}

// then describes what the process did on reading an answer.
func then(sc *Scope, pb, pa *proc) string {
	if pa.dead {
		return ""
	}
	return "; " + n0(stepNote(sc, pb, pa))
}

// n0 drops the note of a step that changed nothing visible.
func n0(s string) string {
	if s == "decides (local step)" {
		return "reads it"
	}
	return s
}

// stepNote describes a main-thread step by what changed.
func stepNote(sc *Scope, pb, pa *proc) string {
	var notes []string
	if !pb.hasLease && pa.hasLease {
		notes = append(notes, fmt.Sprintf("holds its lease (valid until t=%d, lock ModTime %d)", pa.until, pa.server))
	}
	if !pb.lost && pa.lost {
		notes = append(notes, "finds its lease expired")
	}
	if !pb.ready && pa.ready {
		notes = append(notes, "REPORTS ITS BACKUP READY")
	}
	if !pb.failed && pa.failed {
		notes = append(notes, "gives up (not ready)")
	}
	if pa.pend.op != opNone {
		notes = append(notes, "sends "+reqName(sc, pa.pend))
	}
	if len(notes) == 0 {
		return "decides (local step)"
	}
	return strings.Join(notes, ", ")
}

func refNote(pb, pa *proc) string {
	switch {
	case pa.ref.pend.op == opStatLock:
		return "starts a refresh: sends HEAD own lock"
	case pa.ref.pend.op == opPutLock:
		return "saw its lock: sends PUT own lock"
	case !pb.lost && pa.lost && !pa.ref.resp:
		return "finds its lock gone: the lease is lost"
	case !pb.lost && pa.lost:
		return "finds the lease lost and stops"
	case pa.until != pb.until:
		return fmt.Sprintf("extends the lease to t=%d", pa.until)
	}
	return "ends a refresh"
}

// events names the flags a landing raised.
func events(b, a *State) string {
	raised := a.flags &^ b.flags
	var out []string
	for _, f := range []struct {
		bit  uint16
		name string
	}{{FlagResurrect, "RECREATES a deleted lock"}, {FlagLateDelete, "after the gc's lease expired"},
		{FlagConfigReplaced, "REPLACES the config"}, {FlagConfigDeleted, "DELETES the config"},
		{FlagLateCommit, "CREATES the manifest of a writer that is gone"},
		{FlagWrongDelete, "DELETES another manifest than the one meant"}} {
		if raised&f.bit != 0 {
			out = append(out, f.name)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, ", ") + ")"
}

func procName(sc *Scope, i int) string {
	switch sc.role(i) {
	case Writer:
		return fmt.Sprintf("w%d", i)
	case GC:
		return fmt.Sprintf("gc%d", i)
	}
	return fmt.Sprintf("del%d", i)
}

// reqName names a request with its object.
func reqName(sc *Scope, r req) string {
	name := opNames[r.op]
	switch r.op {
	case opPutCfg, opPutCfgIfAbsent:
		return fmt.Sprintf("%s #%d", name, r.arg)
	case opDelLock:
		return fmt.Sprintf("%s of %s", name, procName(sc, int(r.arg)))
	case opPutBlock, opDelBlock:
		return fmt.Sprintf("%s %s", name, keyName(int(r.arg)))
	case opGetMan, opPutMan, opPutManIfAbsent, opDelMan, opPutStateIfAbsent, opGetState:
		return fmt.Sprintf("%s %s", name, strings.TrimPrefix(slotName(int(r.arg)), "of "))
	case opGetDoom:
		return fmt.Sprintf("%s of %s", name, procName(sc, int(r.arg)))
	}
	return name
}

func keyName(k int) string {
	d, v := k/keysPerDig, k%keysPerDig
	if v == 0 {
		return fmt.Sprintf("d%d", d)
	}
	return fmt.Sprintf("d%d.w%d-r%d", d, (v-1)/maxRounds, (v-1)%maxRounds)
}
