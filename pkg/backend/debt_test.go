package backend

import (
	"context"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/testutil"
)

// TestDebtOf: a range held r times counts r-1 times, once when held once
// (its other holder is outside the pool's list), overlaps split; holders
// that go count as deleted.
func TestDebtOf(t *testing.T) {
	r := func(start, end int64) holder { return holder{physRange{start, end}, false} }
	gone := func(start, end int64) holder { return holder{physRange{start, end}, true} }
	for _, c := range []struct {
		hs   []holder
		want int64
	}{
		{nil, 0},
		{[]holder{r(0, 10)}, 10},
		{[]holder{r(0, 10), r(0, 10)}, 10},
		{[]holder{r(0, 10), r(0, 10), r(0, 10)}, 20},
		{[]holder{r(0, 10), r(5, 15)}, 5 + 5 + 5},
		{[]holder{r(20, 30), r(0, 10), r(0, 10)}, 20},
		{[]holder{r(0, 10), gone(0, 10)}, 0},
		{[]holder{r(0, 10), r(0, 10), gone(0, 10)}, 10},
		{[]holder{gone(0, 10)}, 0},
	} {
		if got := debtOf(c.hs); got != c.want {
			t.Errorf("debtOf(%v) = %d, want %d", c.hs, got, c.want)
		}
	}
}

// TestCoWDebtXFS: on reflink XFS a snapshot adds its source's written
// bytes to the debt, a clone of it as much again; rewriting the volume
// pays part of it off; deleting the copies clears it.
func TestCoWDebtXFS(t *testing.T) {
	ctx := context.Background()
	p := openPool(t, testutil.LoopFS(t, "xfs", 1<<30))
	v := mustCreate(t, p, CreateOptions{Name: "v", Kind: KindVolume, SizeBytes: 64 << 20})
	vPath, _ := p.DataPath(v.ID)
	writeRandom(t, vPath, 0, 16<<20)
	debt := func(want int64) {
		t.Helper()
		if got, err := p.CoWDebt(ctx); err != nil || got != want {
			t.Fatalf("CoWDebt = %d (%v), want %d", got, err, want)
		}
	}
	debt(0)
	s := mustCreate(t, p, CreateOptions{Name: "s", Kind: KindSnapshot, SourceID: v.ID})
	debt(16 << 20)
	c := mustCreate(t, p, CreateOptions{Name: "c", Kind: KindVolume, SourceID: s.ID})
	debt(32 << 20)
	if got, err := p.CoWDebt(ctx, s.ID); err != nil || got != 16<<20 {
		t.Fatalf("CoWDebt without the snapshot = %d (%v), want %d", got, err, 16<<20)
	}
	writeRandom(t, vPath, 0, 4<<20)
	debt(28 << 20)
	for _, id := range []string{s.ID, c.ID} {
		if err := p.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// XFS frees a deleted file's blocks in the background (inodegc);
	// until then they are still shared with it. On a busy machine that
	// takes a while after sync: wait for it (up to 30 s) before asking.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		unix.Sync()
		if got, err := p.CoWDebt(ctx); err != nil || got == 0 || time.Now().After(deadline) {
			break
		}
	}
	debt(0)
}
