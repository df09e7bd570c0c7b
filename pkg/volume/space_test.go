package volume

import (
	"fmt"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/backend"
)

// TestReserveAndRoom: the default reserve is 5% of the pool, at most
// 1 GiB; the option replaces it; room never goes negative; the restores
// counted by a guard are those created before it, oldest first.
func TestReserveAndRoom(t *testing.T) {
	m := &Manager{}
	for _, c := range []struct{ total, want int64 }{{1 << 30, (1 << 30) / 20}, {100 << 30, 1 << 30}} {
		if got := m.reserve(backend.Capacity{TotalBytes: c.total}); got != c.want {
			t.Errorf("reserve of a %d-byte pool = %d, want %d", c.total, got, c.want)
		}
	}
	m.cfg.PoolReserveBytes = 7
	if got := m.reserve(backend.Capacity{TotalBytes: 100 << 30}); got != 7 {
		t.Errorf("reserve with -pool-reserve-bytes 7 = %d", got)
	}
	if got := (room{available: 10, reserve: 7, pending: 5}).free(); got != 0 {
		t.Errorf("free of an over-committed pool = %d, want 0", got)
	}
	t0 := time.Now()
	vols := []backend.LVol{
		{ID: "b", CreatedAt: t0, Labels: Record{Phase: PhaseRestoring}.Encode()},
		{ID: "c", CreatedAt: t0.Add(-time.Second)},
		{ID: "a", CreatedAt: t0, Labels: Record{Phase: PhaseRestoring}.Encode()},
		{ID: "d", CreatedAt: t0.Add(-time.Minute), Labels: Record{Phase: PhaseRestoring}.Encode()},
	}
	var ids []string
	for _, lv := range restoring(vols) {
		ids = append(ids, lv.ID)
	}
	if fmt.Sprint(ids) != "[d a b]" {
		t.Errorf("restoring volumes in order %v, want [d a b]", ids)
	}
}
