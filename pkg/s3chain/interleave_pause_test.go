package s3chain_test

import (
	"context"
	"strings"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// The disturbances of TestChainProtocolInterleavings beyond chaosStore's
// errors, delays and stalls: pauses between an actor's check and its
// effect (issue 24) and steps of the store's clock.

// pausePoints are the requests a pause may hold: each is the effect of a
// check made just before it.
var pausePoints = []struct {
	op     storetest.Op
	prefix string
}{
	{storetest.OpDelete, "blocks/"},         // gc: the DELETE after its lease check
	{storetest.OpDelete, "chains/"},         // gc: dropping an emptied chain's config
	{storetest.OpDelete, "pending/"},        // gc: an abandoned lock; a holder's release
	{storetest.OpPut, "pending/"},           // a lock write or refresh, after its Stat
	{storetest.OpPut, "blocks/"},            // an upload, after the lease check
	{storetest.OpPutIfAbsent, "manifests/"}, // a commit, after the lease check
	{storetest.OpDelete, "manifests/"},      // a delete, or a retraction after a lost lease
	{storetest.OpPut, "chains/"},            // a config created without If-None-Match
}

// disturb, at random before an operation of the writer, pauses one of its
// next requests of a random kind for a random delay of up to two TTLs
// (long enough for leases to lapse: a request whose caller gave up meanwhile
// lands late), or steps the store's clock by up to three TTLs either way.
func (wr *writer) disturb() {
	switch wr.rng.IntN(12) {
	case 0, 1, 2:
		p := pausePoints[wr.rng.IntN(len(pausePoints))]
		g := wr.view.Hold(p.op, func(k string) bool { return strings.HasPrefix(k, p.prefix) }, 1+wr.rng.IntN(3))
		wr.w.mu.Lock()
		wr.w.gates = append(wr.w.gates, g)
		wr.w.mu.Unlock()
		go releaseLater(g, time.Duration(wr.rng.Int64N(int64(2*wr.w.ttl))), 4*wr.w.ttl)
	case 3:
		wr.w.stepClock(time.Duration(wr.rng.Int64N(int64(6*wr.w.ttl))) - 3*wr.w.ttl)
	}
}

// releaseLater releases g d after its first call arrived, or after wait
// when none arrives by then.
func releaseLater(g *storetest.Gate, d, wait time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := g.Await(ctx); err == nil {
		time.Sleep(d)
	}
	g.Release()
}

// stepClock steps the shared store's clock by d.
func (w *world) stepClock(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.store.StepClock(d)
	w.shift = max(w.shift, w.store.ClockShift())
}

// releaseAll lets every paused request land, before the invariants are
// checked.
func (w *world) releaseAll() {
	w.mu.Lock()
	gates := w.gates
	w.mu.Unlock()
	for _, g := range gates {
		g.Release()
	}
}

// settleClock steps the clock forward to the largest shift it had, so
// that the locks and blocks of the schedule are all older than what the
// drain writes (a backward step would make them look young or live).
func (w *world) settleClock() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.store.StepClock(w.shift - w.store.ClockShift())
}
