package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// TestRestoreStartsAtOnce (issue 13 case 4): with 0.3 s added to every
// HEAD, the first CreateVolume of a restore from a 64-block backup answers
// within its 2 s deadline (it used to check each block first, 2.4 s here,
// and end DeadlineExceeded on every call), and the restore completes with
// the backup's bytes. A missing block object is then reported by the
// background job: FailedPrecondition naming the object, nothing left.
func TestRestoreStartsAtOnce(t *testing.T) {
	const size = outageSize
	e := outageSource(t, "start-src")
	n, proxy, id, want := e.n, e.proxy, e.id, e.want

	proxy.headDelay.Store(int64(300 * time.Millisecond))
	req := restoreReq("start-copy", id, size, blockCap())
	heads := proxy.heads.Load()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_, err := n.Ctrl.CreateVolume(ctx, req)
	cancel()
	took := time.Since(start)
	t.Logf("first answer after %v (%d HEADs meanwhile): %v", took.Round(time.Millisecond), proxy.heads.Load()-heads, err)
	if c := status.Code(err); c != codes.Aborted && c != codes.OK || took > 1800*time.Millisecond {
		t.Fatalf("first CreateVolume of a restore: %v after %v; want an answer (Aborted or the volume) well within the 2 s deadline", err, took)
	}
	v, err := createRestored(t, n.Ctrl, req, 2*time.Second)
	if err != nil {
		t.Fatalf("restore with slow HEADs: %v", err)
	}
	rp := stagePublish(t, n.Node, v.GetVolumeId(), blockCap())
	if got := hashDevice(t, rp.Path); got != want {
		t.Fatalf("restored sha256 %x, want %x", got, want)
	}
	unpublishUnstage(t, rp)

	_, chain, _ := splitBackupID(t, id)
	obj := largestFile(t, filepath.Join(e.s3.srv.Dir, e.s3.srv.Bucket, "e2e", filepath.FromSlash(s3chain.BlockPrefix(chain))))
	if err := os.Remove(obj); err != nil {
		t.Fatal(err)
	}
	req = restoreReq("start-missing", id, size, blockCap())
	start = time.Now()
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	_, err = n.Ctrl.CreateVolume(ctx, req)
	cancel()
	if c := status.Code(err); c != codes.Aborted && c != codes.FailedPrecondition || time.Since(start) > 1800*time.Millisecond {
		t.Fatalf("first CreateVolume of a restore with a missing block: %v after %v", err, time.Since(start))
	}
	_, err = createRestored(t, n.Ctrl, req, 2*time.Second)
	wantCode(t, "restore with a missing block", err, codes.FailedPrecondition, "missing", filepath.Base(obj))
	if !strings.Contains(status.Convert(err).Message(), s3chain.BlockPrefix(chain)) {
		t.Errorf("message %q does not name the object key", status.Convert(err).Message())
	}
	noVolume(t, n, "start-missing")
}
