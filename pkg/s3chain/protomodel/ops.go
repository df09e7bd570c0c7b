package protomodel

// op is a store request kind.
type op uint8

// Store requests. Lists and GETs answer into the caller's locals.
const (
	opNone op = iota
	opGetCfg
	opPutCfgIfAbsent
	opStatCfg
	opPutCfg // arg: the new config's version (its secret)
	opDelCfg
	opPutLock
	opStatLock
	opDelLock // arg: the process whose lock
	opListLocks
	opListBlocks
	opPutBlock // arg: key
	opDelBlock // arg: key
	opListMans
	opGetMan         // arg: slot
	opPutManIfAbsent // arg: slot
	opPutMan         // arg: slot
	opDelMan         // arg: slot
	opPutDoom
	opListDooms
	opGetDoom // arg: the gc process whose record
	opDelDoom
	opPutStateIfAbsent // arg: slot; a writer's says ready, others' void
	opGetState         // arg: slot
)

var opNames = [...]string{"-", "GET config", "PUT config If-None-Match", "HEAD config", "PUT config", "DELETE config",
	"PUT own lock", "HEAD own lock", "DELETE lock", "LIST locks", "LIST blocks", "PUT block", "DELETE block",
	"LIST manifests", "GET manifest", "PUT manifest If-None-Match", "PUT manifest", "DELETE manifest",
	"PUT doom record", "LIST doom records", "GET doom record", "DELETE own doom record",
	"PUT state record If-None-Match", "GET state record"}

// issue sends r from p's main thread.
func (p *proc) issue(o op, arg uint8) { p.pend = req{o, arg} }

// await issues o(arg) and continues at pc next, where the answer is read:
// the one step every role's pcs take between two requests.
func (p *proc) await(o op, arg uint8, next uint8) {
	p.issue(o, arg)
	p.pc = next
}
