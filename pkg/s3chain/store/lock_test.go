package store_test

import (
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

func TestParseRetainPeriod(t *testing.T) {
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "1y": 365 * 24 * time.Hour, "36h": 36 * time.Hour, "90s": 90 * time.Second} {
		if got, err := store.ParseRetainPeriod(in); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0d", "-2h", "d", "1.5d", "200y", "soon"} {
		if _, err := store.ParseRetainPeriod(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// Covers: a later date in the same mode, or any later COMPLIANCE; never an
// earlier date, a weaker mode, or none.
func TestRetentionCovers(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	g := store.Retention{Mode: store.LockGovernance, Until: t0}
	c := store.Retention{Mode: store.LockCompliance, Until: t0}
	later := func(r store.Retention) store.Retention { r.Until = r.Until.Add(time.Second); return r }
	for _, k := range []struct {
		cur, want store.Retention
		ok        bool
	}{
		{g, g, true}, {later(g), g, true}, {g, later(g), false}, {c, g, true}, {g, c, false},
		{store.Retention{}, g, false}, {later(c), g, true},
	} {
		if got := k.cur.Covers(k.want); got != k.ok {
			t.Errorf("%+v covers %+v = %v, want %v", k.cur, k.want, got, k.ok)
		}
	}
	if !g.Locked(t0.Add(-time.Nanosecond)) || g.Locked(t0) || (store.Retention{}).Locked(t0) {
		t.Error("Locked")
	}
}
