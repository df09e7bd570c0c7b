package e2e

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/volume"
)

// The operations of TestLifecycleInterleavings' workers on the driver and
// their model (lifecycle_interleave_test.go).

// pickVol returns a random volume not being deleted, or nil.
func (s *lcSchedule) pickVol(rng *rand.Rand) *lcVol {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c []*lcVol
	for _, v := range s.vols {
		if !v.gone && !v.orphan {
			c = append(c, v)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[rng.IntN(len(c))]
}

// pickSnap returns a random ready snapshot not being deleted whose kind
// ok accepts, or nil.
func (s *lcSchedule) pickSnap(rng *rand.Rand, ok func(*lcSnap) bool) *lcSnap {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c []*lcSnap
	for _, sn := range s.snaps {
		if sn.ready && !sn.gone && !sn.orphan && ok(sn) {
			c = append(c, sn)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[rng.IntN(len(c))]
}

func (s *lcSchedule) isGone(v *lcVol) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return v.gone
}

func (s *lcSchedule) snapGone(sn *lcSnap) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sn.gone
}

func volReq(name string, src *csi.VolumeContentSource, params map[string]string) *csi.CreateVolumeRequest {
	return &csi.CreateVolumeRequest{Name: name, CapacityRange: &csi.CapacityRange{RequiredBytes: lcVolSize},
		VolumeCapabilities: []*csi.VolumeCapability{blockCap()}, VolumeContentSource: src, Parameters: params}
}

// createVol settles a CreateVolume; with twice, the same request goes
// from two goroutines at once, and both final answers must agree.
func (s *lcSchedule) createVol(req *csi.CreateVolumeRequest, twice bool) (*csi.Volume, error) {
	call := func() (*csi.Volume, error) {
		var v *csi.Volume
		err := s.settle("CreateVolume "+req.GetName(), func(ctx context.Context) error {
			resp, err := s.drv.Ctrl.CreateVolume(ctx, req)
			v = resp.GetVolume()
			return err
		})
		return v, err
	}
	if !twice {
		return call()
	}
	var v2 *csi.Volume
	var err2 error
	done := make(chan struct{})
	go func() { defer close(done); v2, err2 = call() }()
	v, err := call()
	<-done
	if (err == nil) != (err2 == nil) || (err == nil && v.GetVolumeId() != v2.GetVolumeId()) {
		s.fail("CreateVolume %s sent twice at once: %v (%v) and %v (%v)", req.GetName(), v.GetVolumeId(), err, v2.GetVolumeId(), err2)
	}
	return v, err
}

// opCreate creates an empty volume and writes data to it.
func (s *lcSchedule) opCreate(rng *rand.Rand) bool {
	name := s.name("v")
	req := volReq(name, nil, pvcParams("lc", name))
	v, err := s.createVol(req, rng.IntN(3) == 0)
	if err != nil {
		s.fail("CreateVolume %s (empty): %v", name, err)
		return true
	}
	lv := &lcVol{name: name, req: req, id: v.GetVolumeId(), how: "empty"}
	lv.content.Lock()
	s.mu.Lock()
	s.vols = append(s.vols, lv)
	s.mu.Unlock()
	s.write(rng, lv)
	lv.content.Unlock()
	return true
}

// opWrite writes new data to a volume.
func (s *lcSchedule) opWrite(rng *rand.Rand) bool {
	v := s.pickVol(rng)
	if v == nil {
		return false
	}
	v.content.Lock()
	defer v.content.Unlock()
	s.write(rng, v)
	return true
}

// write stages and publishes v, writes 2 MiB at two random places, and
// records the device's sha256. The caller holds v.content. A volume being
// deleted may be NotFound.
func (s *lcSchedule) write(rng *rand.Rand, v *lcVol) {
	path, release, err := s.publish(v)
	if err != nil {
		if !(s.isGone(v) && status.Code(err) == codes.NotFound) {
			s.fail("publish %s (%s) to write: %v", v.id, v.how, err)
		}
		return
	}
	defer release()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		s.fail("open %s: %v", path, err)
		return
	}
	defer f.Close()
	buf := make([]byte, mib)
	for range 2 {
		for i := range buf {
			buf[i] = byte(rng.Uint32())
		}
		off := rng.Int64N(lcVolSize/mib) * mib
		if _, err := f.WriteAt(buf, off); err != nil {
			s.fail("write %s at %d: %v", path, off, err)
			return
		}
	}
	if err := unix.Fsync(int(f.Fd())); err != nil {
		s.fail("fsync %s: %v", path, err)
		return
	}
	if v.hash, err = hashPath(path); err != nil {
		s.fail("read %s: %v", path, err)
	}
}

// publish stages and publishes v as a block device and returns its path
// and the function that unpublishes and unstages it (failures recorded).
func (s *lcSchedule) publish(v *lcVol) (string, func(), error) {
	n := s.names.Add(1)
	staging := filepath.Join(s.dir, fmt.Sprintf("staging-%d", n))
	target := filepath.Join(s.dir, fmt.Sprintf("target-%d", n))
	err := s.settle("NodeStageVolume "+v.id, func(ctx context.Context) error {
		_, err := s.drv.Node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: v.id,
			StagingTargetPath: staging, VolumeCapability: blockCap()})
		return err
	})
	if err != nil {
		return "", nil, err
	}
	unstage := func() {
		err := s.settle("NodeUnstageVolume "+v.id, func(ctx context.Context) error {
			_, err := s.drv.Node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: v.id, StagingTargetPath: staging})
			return err
		})
		if err != nil {
			s.fail("NodeUnstageVolume %s: %v", v.id, err)
		}
	}
	err = s.settle("NodePublishVolume "+v.id, func(ctx context.Context) error {
		_, err := s.drv.Node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: v.id,
			StagingTargetPath: staging, TargetPath: target, VolumeCapability: blockCap()})
		return err
	})
	if err != nil {
		unstage()
		return "", nil, err
	}
	return target, func() {
		err := s.settle("NodeUnpublishVolume "+v.id, func(ctx context.Context) error {
			_, err := s.drv.Node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.id, TargetPath: target})
			return err
		})
		if err != nil {
			s.fail("NodeUnpublishVolume %s: %v", v.id, err)
		}
		unstage()
	}, nil
}

func hashPath(path string) ([32]byte, error) {
	var sum [32]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// opSnapshot takes a local or backup snapshot of a volume; a backup is
// asked again until ready, every answer with the first one's id.
func (s *lcSchedule) opSnapshot(backup bool) func(*rand.Rand) bool {
	return func(rng *rand.Rand) bool {
		v := s.pickVol(rng)
		if v == nil {
			return false
		}
		req := &csi.CreateSnapshotRequest{Name: s.name("s"), SourceVolumeId: v.id}
		if backup {
			req.Parameters = backupParams(offsite)
		}
		v.content.RLock() // the snapshot holds what the volume held
		snap, err := s.createSnap(req)
		sn := &lcSnap{name: req.Name, req: req, src: v, hash: v.hash, backup: backup}
		v.content.RUnlock()
		switch {
		case err != nil && s.isGone(v) && status.Code(err) == codes.NotFound:
			return true
		case err != nil:
			s.fail("CreateSnapshot %s of %s: %v", req.Name, v.id, err)
			return true
		}
		sn.id = snap.GetSnapshotId()
		s.mu.Lock()
		s.snaps = append(s.snaps, sn)
		if backup {
			r, err := volume.ParseBackupID(sn.id)
			if err != nil {
				s.fail("CreateSnapshot %s: snapshot id %q is no backup id: %v", req.Name, sn.id, err)
			}
			s.byRef[r.String()] = sn
		}
		s.mu.Unlock()
		s.awaitReady(sn, snap)
		return true
	}
}

// createSnap settles a CreateSnapshot.
func (s *lcSchedule) createSnap(req *csi.CreateSnapshotRequest) (*csi.Snapshot, error) {
	var snap *csi.Snapshot
	err := s.settle("CreateSnapshot "+req.Name, func(ctx context.Context) error {
		resp, err := s.drv.Ctrl.CreateSnapshot(ctx, req)
		snap = resp.GetSnapshot()
		return err
	})
	return snap, err
}

// awaitReady asks for sn again until it is ready; every answer must carry
// its id. A snapshot deleted meanwhile ends the wait.
func (s *lcSchedule) awaitReady(sn *lcSnap, snap *csi.Snapshot) {
	for deadline := time.Now().Add(lcSettleFor); !snap.GetReadyToUse(); {
		if s.snapGone(sn) {
			return
		}
		if time.Now().After(deadline) {
			s.fail("backup %s (%s) not ready within %v", sn.name, sn.id, lcSettleFor)
			return
		}
		time.Sleep(200 * time.Millisecond)
		var err error
		if snap, err = s.createSnap(sn.req); err != nil {
			if !s.snapGone(sn) {
				s.fail("CreateSnapshot %s again: %v", sn.name, err)
			}
			return
		}
		if snap.GetSnapshotId() != sn.id {
			if !s.snapGone(sn) {
				s.fail("CreateSnapshot %s again: snapshot id %s, first %s", sn.name, snap.GetSnapshotId(), sn.id)
				return
			}
			sn = s.adoptSnap(sn, snap)
		}
	}
	s.mu.Lock()
	sn.ready = true
	s.mu.Unlock()
}

// adoptSnap records the snapshot a retry of deleted sn's request made.
func (s *lcSchedule) adoptSnap(sn *lcSnap, snap *csi.Snapshot) *lcSnap {
	o := &lcSnap{name: sn.name, req: sn.req, id: snap.GetSnapshotId(), src: sn.src, backup: sn.backup, orphan: true}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snaps = append(s.snaps, o)
	if r, err := volume.ParseBackupID(o.id); err == nil && o.backup {
		s.byRef[r.String()] = o
	}
	return o
}

// opRestore makes a volume from a ready backup: its snapshot id as the
// source, or fromBackup with its id or "latest" of its chain.
func (s *lcSchedule) opRestore(rng *rand.Rand) bool {
	sn := s.pickSnap(rng, func(sn *lcSnap) bool { return sn.backup })
	if sn == nil {
		return false
	}
	name := s.name("r")
	params := pvcParams("lc", name)
	var src *csi.VolumeContentSource
	r, _ := volume.ParseBackupID(sn.id)
	how := "restore of " + sn.id
	switch rng.IntN(3) {
	case 0:
		src = snapshotSource(sn.id)
	case 1:
		params["fromBackup"] = r.String()
		how = "fromBackup " + r.String()
	default:
		r.Backup = "latest"
		params["fromBackup"] = r.String()
		how = "fromBackup " + r.String()
	}
	req := volReq(name, src, params)
	v, err := s.createVol(req, rng.IntN(4) == 0)
	if err != nil {
		if !(s.snapGone(sn) && status.Code(err) == codes.NotFound) {
			s.fail("CreateVolume %s (%s): %v", name, how, err)
		}
		return true
	}
	from := s.restoredFrom(v)
	if from == nil {
		s.fail("CreateVolume %s (%s): volume_context restoredFrom %q names no backup taken", name, how, v.GetVolumeContext()["restoredFrom"])
		return true
	}
	if !strings.HasSuffix(how, "@latest") && from != sn {
		s.fail("CreateVolume %s (%s): restored from %s", name, how, from.id)
	}
	s.mu.Lock()
	s.vols = append(s.vols, &lcVol{name: name, req: req, id: v.GetVolumeId(), how: how + " = " + from.id, hash: from.hash,
		orphan: from.orphan}) // an orphan's content is unknown
	s.mu.Unlock()
	return true
}

// restoredFrom finds the backup a restored volume names (volume_context
// restoredFrom), waiting a little for one whose first CreateSnapshot
// answer is still on its way.
func (s *lcSchedule) restoredFrom(v *csi.Volume) *lcSnap {
	ref := v.GetVolumeContext()["restoredFrom"]
	for range 50 {
		s.mu.Lock()
		sn := s.byRef[ref]
		s.mu.Unlock()
		if sn != nil {
			return sn
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// opClone makes a volume from a local snapshot or a volume.
func (s *lcSchedule) opClone(rng *rand.Rand) bool {
	name := s.name("c")
	if rng.IntN(2) == 0 {
		sn := s.pickSnap(rng, func(sn *lcSnap) bool { return !sn.backup })
		if sn == nil {
			return false
		}
		req := volReq(name, snapshotSource(sn.id), nil)
		v, err := s.createVol(req, rng.IntN(3) == 0)
		if err != nil {
			if !(s.snapGone(sn) && status.Code(err) == codes.NotFound) {
				s.fail("CreateVolume %s (clone of snapshot %s): %v", name, sn.id, err)
			}
			return true
		}
		s.mu.Lock()
		s.vols = append(s.vols, &lcVol{name: name, req: req, id: v.GetVolumeId(), how: "clone of " + sn.id, hash: sn.hash})
		s.mu.Unlock()
		return true
	}
	src := s.pickVol(rng)
	if src == nil {
		return false
	}
	req := volReq(name, volumeSource(src.id), nil)
	src.content.RLock()
	v, err := s.createVol(req, rng.IntN(3) == 0)
	hash := src.hash
	src.content.RUnlock()
	if err != nil {
		if !(s.isGone(src) && status.Code(err) == codes.NotFound) {
			s.fail("CreateVolume %s (clone of volume %s): %v", name, src.id, err)
		}
		return true
	}
	s.mu.Lock()
	s.vols = append(s.vols, &lcVol{name: name, req: req, id: v.GetVolumeId(), how: "clone of " + src.id, hash: hash})
	s.mu.Unlock()
	return true
}

// opDeleteVolume deletes a volume; while another worker has it staged
// the answer is FailedPrecondition, and the call is repeated.
func (s *lcSchedule) opDeleteVolume(rng *rand.Rand) bool {
	v := s.pickVol(rng)
	if v == nil {
		return false
	}
	s.deleteVol(v)
	return true
}

func (s *lcSchedule) deleteVol(v *lcVol) {
	s.mu.Lock()
	if v.gone {
		s.mu.Unlock()
		return
	}
	v.gone = true
	s.mu.Unlock()
	err := s.settle("DeleteVolume "+v.id, func(ctx context.Context) error {
		_, err := s.drv.Ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.id})
		return err
	}, codes.FailedPrecondition)
	if err != nil {
		s.fail("DeleteVolume %s (%s): %v", v.id, v.how, err)
	}
}

// opDeleteSnapshot deletes a snapshot or backup, ready or not.
func (s *lcSchedule) opDeleteSnapshot(rng *rand.Rand) bool {
	s.mu.Lock()
	var c []*lcSnap
	for _, sn := range s.snaps {
		if !sn.gone {
			c = append(c, sn)
		}
	}
	s.mu.Unlock()
	if len(c) == 0 {
		return false
	}
	s.deleteSnap(c[rng.IntN(len(c))])
	return true
}

func (s *lcSchedule) deleteSnap(sn *lcSnap) {
	s.mu.Lock()
	if sn.gone {
		s.mu.Unlock()
		return
	}
	sn.gone = true
	s.mu.Unlock()
	err := s.settle("DeleteSnapshot "+sn.id, func(ctx context.Context) error {
		_, err := s.drv.Ctrl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: sn.id})
		return err
	})
	if err != nil {
		s.fail("DeleteSnapshot %s: %v", sn.id, err)
	}
}

// opList checks that ListSnapshots shows every snapshot that was ready
// before the call and is not being deleted after it, with its source.
func (s *lcSchedule) opList(*rand.Rand) bool {
	s.mu.Lock()
	var want []*lcSnap
	for _, sn := range s.snaps {
		if sn.ready && !sn.gone {
			want = append(want, sn)
		}
	}
	s.mu.Unlock()
	got, err := s.listSnapshots()
	if err != nil {
		s.fail("ListSnapshots: %v", err)
		return true
	}
	for _, sn := range want {
		l, ok := got[sn.id]
		switch {
		case s.snapGone(sn):
		case !ok:
			s.fail("ListSnapshots misses %s (%s of %s), ready and not deleted", sn.id, sn.name, sn.src.id)
		case !l.GetReadyToUse() || l.GetSourceVolumeId() != sn.src.id:
			s.fail("ListSnapshots: %s ready %v source %s, want ready, source %s", sn.id, l.GetReadyToUse(), l.GetSourceVolumeId(), sn.src.id)
		}
	}
	return true
}

// listSnapshots settles a ListSnapshots of everything, by id.
func (s *lcSchedule) listSnapshots() (map[string]*csi.Snapshot, error) {
	got := map[string]*csi.Snapshot{}
	err := s.settle("ListSnapshots", func(ctx context.Context) error {
		resp, err := s.drv.Ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})
		for _, e := range resp.GetEntries() {
			got[e.GetSnapshot().GetSnapshotId()] = e.GetSnapshot()
		}
		return err
	})
	return got, err
}

// opRetry sends the request that made an object again: the answer must
// be that object (CSI spec: CreateVolume and CreateSnapshot are idempotent).
func (s *lcSchedule) opRetry(rng *rand.Rand) bool {
	if rng.IntN(2) == 0 {
		v := s.pickVol(rng)
		if v == nil {
			return false
		}
		s.retryVol(v)
		return true
	}
	sn := s.pickSnap(rng, func(*lcSnap) bool { return true })
	if sn == nil {
		return false
	}
	s.retrySnap(sn)
	return true
}

func (s *lcSchedule) retryVol(v *lcVol) {
	got, err := s.createVol(v.req, false)
	switch {
	case s.isGone(v) && err == nil && got.GetVolumeId() != v.id:
		s.mu.Lock()
		s.vols = append(s.vols, &lcVol{name: v.name, req: v.req, id: got.GetVolumeId(), how: v.how + " again", orphan: true})
		s.mu.Unlock()
	case s.isGone(v):
	case err != nil:
		s.fail("CreateVolume %s (%s) retried after OK with %s: %v", v.name, v.how, v.id, err)
	case got.GetVolumeId() != v.id:
		s.fail("CreateVolume %s (%s) retried: volume %s, first %s", v.name, v.how, got.GetVolumeId(), v.id)
	}
}

// retrySnap sends the request of ready snapshot sn again. Its local
// snapshot may have been swept since (superseded or its volume deleted):
// the retry then answered NotFound or took a new backup (a known bug,
// tolerateSweptRetry).
func (s *lcSchedule) retrySnap(sn *lcSnap) {
	got, err := s.createSnap(sn.req)
	swept := sn.backup && (status.Code(err) == codes.NotFound || (err == nil && got.GetSnapshotId() != sn.id))
	if swept && tolerateSweptRetry && !s.snapGone(sn) {
		s.sweptRetries.Add(1)
		s.t.Logf("seed %d: known bug (TestBackupRetryAfterSweepSameID): CreateSnapshot %s retried after ready with %s: %v, %v",
			s.seed, sn.name, sn.id, got.GetSnapshotId(), err)
	}
	switch {
	case swept && tolerateSweptRetry && err != nil:
	case (s.snapGone(sn) || (swept && tolerateSweptRetry)) && err == nil && got.GetSnapshotId() != sn.id:
		s.awaitReady(s.adoptSnap(sn, got), got)
	case s.snapGone(sn):
	case err != nil:
		s.fail("CreateSnapshot %s retried after ready with %s: %v", sn.name, sn.id, err)
	case got.GetSnapshotId() != sn.id || !got.GetReadyToUse():
		s.fail("CreateSnapshot %s retried: %s ready %v, first %s ready", sn.name, got.GetSnapshotId(), got.GetReadyToUse(), sn.id)
	}
}

// opCheck reads a volume back.
func (s *lcSchedule) opCheck(rng *rand.Rand) bool {
	v := s.pickVol(rng)
	if v == nil {
		return false
	}
	s.check(v)
	return true
}

// check publishes v and compares its sha256 with the model's.
func (s *lcSchedule) check(v *lcVol) {
	v.content.RLock()
	defer v.content.RUnlock()
	path, release, err := s.publish(v)
	if err != nil {
		if !(s.isGone(v) && status.Code(err) == codes.NotFound) {
			s.fail("publish %s (%s) to read it: %v", v.id, v.how, err)
		}
		return
	}
	defer release()
	got, err := hashPath(path)
	if err != nil {
		s.fail("read %s: %v", path, err)
	} else if got != v.hash {
		s.fail("volume %s (%s, %s): sha256 %x, want %x", v.id, v.name, v.how, got[:8], v.hash[:8])
	}
}
