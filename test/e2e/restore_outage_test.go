package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// TestRestoreSurvivesOutage (issue 13 case 5): the S3 endpoint refuses
// connections for 12 s in the middle of a restore, longer than the store's
// own retries (about 8 s). The restore waits ("waiting for target" in the
// Aborted answers meanwhile, never a final error), continues from its
// checkpoint when the target is back, and completes with the backup's
// bytes, fetching each block about once.
func TestRestoreSurvivesOutage(t *testing.T) {
	const size = outageSize
	e := outageSource(t, "outage-src")
	n, proxy, id, want := e.n, e.proxy, e.id, e.want

	// 64 blocks, 8 at a time, 0.5 s each: about 4 s of restore.
	proxy.getDelay.Store(int64(500 * time.Millisecond))
	gets := proxy.blockGets.Load()
	req := restoreReq("outage-copy", id, size, blockCap())
	answer := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		_, err := n.Ctrl.CreateVolume(ctx, req)
		return err
	}
	wantCode(t, "first CreateVolume", answer(), codes.Aborted, "in progress")
	for proxy.blockGets.Load()-gets < 24 { // a third of the blocks on their way
		time.Sleep(50 * time.Millisecond)
	}
	back := proxy.outage(12 * time.Second)
	waiting := false
	for up := false; !up; {
		select {
		case <-back:
			up = true
		case <-time.After(time.Second):
		}
		err := answer()
		if status.Code(err) != codes.Aborted {
			t.Fatalf("CreateVolume during the outage: %v, want Aborted (still in progress)", err)
		}
		if msg := status.Convert(err).Message(); strings.Contains(msg, "waiting for target") {
			if !waiting {
				t.Logf("during the outage: %s", msg)
			}
			waiting = true
		}
	}
	if !waiting {
		t.Errorf("no CreateVolume answer during the 12 s outage said \"waiting for target\"")
	}
	proxy.getDelay.Store(0)
	v, err := createRestored(t, n.Ctrl, req, 5*time.Second)
	if err != nil {
		t.Fatalf("restore after the outage: %v", err)
	}
	rp := stagePublish(t, n.Node, v.GetVolumeId(), blockCap())
	if got := hashDevice(t, rp.Path); got != want {
		t.Fatalf("restored across an outage: sha256 %x, want %x", got, want)
	}
	unpublishUnstage(t, rp)
	// Blocks written before the outage are kept: at most those in flight
	// when it began (8 workers, one retry each) are fetched again.
	blocks := int64(size / s3chain.DefaultBlockSize) // all written: 4 x 64 MiB
	t.Logf("%d block GETs for %d blocks", proxy.blockGets.Load()-gets, blocks)
	if got := proxy.blockGets.Load() - gets; got > blocks+16 {
		t.Errorf("%d block GETs for %d blocks: the restore started over", got, blocks)
	}
}
