package driver

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/pkg/backend"
)

// TestRestoreSpaceCodes: a write that meets ENOSPC, like the pool's own
// ErrNoSpace, is ResourceExhausted whatever wraps it.
func TestRestoreSpaceCodes(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("restore: write block 3 to /pool/x.img: %w", syscall.ENOSPC),
		fmt.Errorf("room: %w", backend.ErrNoSpace),
	} {
		if c := chainCode(err); c != codes.ResourceExhausted {
			t.Errorf("chainCode(%v) = %v, want ResourceExhausted", err, c)
		}
	}
}

// TestReserveAndRoom: the default reserve is 5% of the pool, at most
// 1 GiB; the option replaces it; room never goes negative; the restores
// counted by a guard are those created before it, oldest first.
func TestReserveAndRoom(t *testing.T) {
	d := &Driver{}
	for _, c := range []struct{ total, want int64 }{{1 << 30, (1 << 30) / 20}, {100 << 30, 1 << 30}} {
		if got := d.reserve(backend.Capacity{TotalBytes: c.total}); got != c.want {
			t.Errorf("reserve of a %d-byte pool = %d, want %d", c.total, got, c.want)
		}
	}
	d.opts.PoolReserveBytes = 7
	if got := d.reserve(backend.Capacity{TotalBytes: 100 << 30}); got != 7 {
		t.Errorf("reserve with -pool-reserve-bytes 7 = %d", got)
	}
	if got := (room{available: 10, reserve: 7, pending: 5}).free(); got != 0 {
		t.Errorf("free of an over-committed pool = %d, want 0", got)
	}
	t0 := time.Now()
	vols := []backend.LVol{
		{ID: "b", CreatedAt: t0, Labels: map[string]string{labelState: stateRestoring}},
		{ID: "c", CreatedAt: t0.Add(-time.Second)},
		{ID: "a", CreatedAt: t0, Labels: map[string]string{labelState: stateRestoring}},
		{ID: "d", CreatedAt: t0.Add(-time.Minute), Labels: map[string]string{labelState: stateRestoring}},
	}
	var ids []string
	for _, lv := range restoring(vols) {
		ids = append(ids, lv.ID)
	}
	if fmt.Sprint(ids) != "[d a b]" {
		t.Errorf("restoring volumes in order %v, want [d a b]", ids)
	}
}
