package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/driver"
	"github.com/chainvol/chainvol/pkg/fdkeep"
)

// TestInstantRestoreKeptAcrossDriverKill: with a descriptor keeper (which
// restarts once, and is given the connection again by the driver), the
// driver is killed (SIGKILL) while an instant restore hydrates and an
// application reads the staged volume; a new driver on the same pool,
// state and keeper takes the FUSE connection over at its start. No read
// of the application fails or returns other bytes than the backup's and
// its writes, across the kill and after (the I/O waits for the restart);
// a write the application never fsynced is still there; hydration ends;
// unstaging on the new driver leaves nothing behind, the keeper's copy
// included.
func TestInstantRestoreKeptAcrossDriverKill(t *testing.T) {
	const size = 256 * mib
	sock := filepath.Join(t.TempDir(), "keeper.sock")
	keeper, stopKeeper := testutil.StartKeeper(t, sock)
	r := startRestartRigWith(t, "inst-kept-src", size, func(o *driver.Options) { o.FDKeeper = sock })
	id := backup(t, r.first.Ctrl, r.vol.GetVolumeId(), "inst-kept-b1", "")
	expect := expectedImage(t, size)

	resp, err := r.first.Ctrl.CreateVolume(rpcCtx(t), instantReq("inst-kept", id, size, blockCap()))
	if err != nil {
		t.Fatalf("instant CreateVolume: %v", err)
	}
	r.proxy.setDelay(300 * time.Millisecond) // hydration takes seconds
	volID := resp.GetVolume().GetVolumeId()
	p := stagePublish(t, r.first.Node, volID, blockCap())
	if keys, err := keeper.Keys(context.Background()); err != nil || len(keys) != 1 || keys[0] != volID {
		t.Fatalf("the keeper holds %v (%v), want the staged volume %s", keys, err, volID)
	}
	synced, unsynced := size/8+mib, size/8+3*mib // in a stretch of zeros of the source
	patch := make([]byte, mib)
	_, _ = rand.Read(patch)
	writeSyncedAt(t, p.Path, patch, int64(synced))
	copy(expect[synced:], patch)
	_, _ = rand.Read(patch)
	writeAt(t, p.Path, patch, int64(unsynced)) // never fsynced
	copy(expect[unsynced:], patch)

	// The keeper restarts (it forgets everything); the driver gives it the
	// volume's connection again.
	stopKeeper()
	keeper, _ = testutil.StartKeeper(t, sock)
	awaitKept(t, keeper, volID)

	app := startReader(t, p.Path, expect, size/2)
	time.Sleep(time.Second)
	killed := time.Now()
	r.first.kill()
	time.Sleep(500 * time.Millisecond) // the restart takes its time
	second := r.restart(t)
	ready := time.Since(killed)
	p.node = second.Node
	time.Sleep(time.Second) // the application reads on the new driver
	reads, slowest := app.stop(t)
	t.Logf("%d reads of 4 MiB, none failed; the slowest took %v; the new driver served %v after the kill", reads, slowest, ready)

	r.proxy.setDelay(0)
	awaitReady(t, second, volID)
	readsBackup(t, p.Path, expect, 0, size)
	unpublishUnstage(t, p)
	noInstantLeft(t, second, volID)
	if keys, err := keeper.Keys(context.Background()); err != nil || len(keys) != 0 {
		t.Fatalf("after unstage the keeper holds %v (%v), want nothing", keys, err)
	}
}

// awaitKept waits until the keeper holds volume id (20 s at most).
func awaitKept(t *testing.T, keeper fdkeep.Client, id string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		keys, err := keeper.Keys(context.Background())
		if err == nil && len(keys) == 1 && keys[0] == id {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted keeper holds %v (%v) after 20 s, want %s: the driver did not give it again", keys, err, id)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeAt writes p at off of device dev, without fsync.
func writeAt(t *testing.T, dev string, p []byte, off int64) {
	t.Helper()
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(p, off); err != nil {
		t.Fatalf("write %s at %d: %v", dev, off, err)
	}
}

// reader reads a device in 4 MiB pieces from an offset on, comparing
// each with the expected bytes, until stopped.
type reader struct {
	done    chan struct{}
	result  chan error
	reads   int
	slowest time.Duration
}

func startReader(t *testing.T, dev string, want []byte, from int64) *reader {
	t.Helper()
	f, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{done: make(chan struct{}), result: make(chan error, 1)}
	go func() {
		defer f.Close()
		buf := make([]byte, 4*mib)
		for pos := from; ; pos = (pos + int64(len(buf))) % int64(len(want)) {
			select {
			case <-r.done:
				r.result <- nil
				return
			default:
			}
			start := time.Now()
			if _, err := f.ReadAt(buf, pos); err != nil {
				r.result <- err
				return
			}
			r.slowest = max(r.slowest, time.Since(start))
			r.reads++
			if !bytes.Equal(buf, want[pos:pos+int64(len(buf))]) {
				r.result <- errWrongBytes(pos)
				return
			}
		}
	}()
	return r
}

// stop ends the reader and fails the test if a read failed.
func (r *reader) stop(t *testing.T) (int, time.Duration) {
	t.Helper()
	close(r.done)
	select {
	case err := <-r.result:
		if err != nil {
			t.Fatalf("the application's read: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the application's read still waits a minute after the new driver started")
	}
	return r.reads, r.slowest
}

type errWrongBytes int64

func (e errWrongBytes) Error() string {
	return fmt.Sprintf("read returned bytes other than the backup's and the writes' at %d", int64(e))
}
