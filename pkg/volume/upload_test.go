package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// uploadEnv is a Manager over a real pool holding a 1 MiB block volume,
// and a fault-injecting in-memory target.
type uploadEnv struct {
	ctx   context.Context
	m     *Manager
	pool  *backend.FilePool
	store *storetest.Faulty
	repo  *s3chain.Repo
	vol   backend.LVol
	opens int
}

func newUploadEnv(t *testing.T) *uploadEnv {
	t.Helper()
	e := &uploadEnv{ctx: context.Background(), pool: testPool(t), store: storetest.NewFaulty(storetest.NewMem())}
	e.m = NewManager(e.pool, Config{StateDir: t.TempDir(), Node: "node-1"})
	var err error
	if e.repo, err = s3chain.NewRepo(e.store, s3chain.RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	e.vol, err = e.pool.Create(e.ctx, backend.CreateOptions{Name: "v", Kind: backend.KindVolume, SizeBytes: 1 << 20,
		Labels: Record{AccessType: AccessBlock, PVCNamespace: "ns", PVCName: "pvc"}.Encode()})
	if err != nil {
		t.Fatal(err)
	}
	e.write(t, 0, "first")
	return e
}

// write puts text at off into the volume's data file.
func (e *uploadEnv) write(t *testing.T, off int64, text string) {
	t.Helper()
	path, _ := e.pool.DataPath(e.vol.ID)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte(text), off); err != nil {
		t.Fatal(err)
	}
}

// snapshot takes the backup snapshot of the volume for backup id.
func (e *uploadEnv) snapshot(t *testing.T, id string) (backend.LVol, target.Ref) {
	t.Helper()
	ref := target.Ref{Target: "t", Chain: "ns/pvc", Backup: id}
	snap, err := e.m.CreateSnapshot(e.ctx, backend.CreateOptions{Name: "snap-" + id, SourceID: e.vol.ID},
		Record{AccessType: AccessBlock, Hidden: true, BackupRef: IDOf(ref), Upload: Uploading, Unreported: true,
			BlockSize: s3chain.MinBlockSize})
	if err != nil {
		t.Fatal(err)
	}
	return snap, ref
}

// upload runs Manager.Upload in a job and returns its error and duration.
func (e *uploadEnv) upload(snap backend.LVol, ref target.Ref) (error, time.Duration) {
	h := UploadHooks{Open: func(context.Context) (*s3chain.Repo, error) { e.opens++; return e.repo, nil }}
	start := time.Now()
	j := e.m.StartJob(snap.ID, "backup upload", func(ctx context.Context, j *Job) error {
		return e.m.Upload(ctx, j, snap, ref, h)
	})
	<-j.Done()
	e.m.ForgetJob(snap.ID)
	return j.Err(), time.Since(start)
}

// TestUploadRetriesAndChains: a failure the store does not retry (a
// broken connection mid-stream) costs one more attempt, not the backup;
// the next backup of the chain is incremental from the first, whose local
// snapshot is its FIEMAP base once recorded Uploaded; an upload a restart
// interrupted after its commit is not made twice.
func TestUploadRetriesAndChains(t *testing.T) {
	e := newUploadEnv(t)
	s1, r1 := e.snapshot(t, "b1")
	e.store.Add(storetest.Fault{Op: storetest.OpPut, Key: isBlock, Nth: 1, Err: errors.New("connection reset by peer")})
	if err, _ := e.upload(s1, r1); err != nil {
		t.Fatalf("upload with one broken put: %v", err)
	}
	if e.opens != 2 {
		t.Errorf("%d attempts, want 2", e.opens)
	}
	m1, err := e.repo.Manifest(e.ctx, "ns/pvc", "b1")
	if err != nil || m1.ParentID != "" || m1.VolumeMode != s3chain.VolumeModeBlock || m1.Node != "node-1" {
		t.Fatalf("first manifest %+v, %v", m1, err)
	}
	if _, err := os.Stat(e.m.ImageRecordPath(s1.ID)); err != nil {
		t.Errorf("image record of an uploaded backup: %v", err)
	}
	if _, err := Update(e.ctx, e.pool, s1.ID, func(r *Record) { r.Upload, r.UploadDoneAt = Uploaded, time.Now() }); err != nil {
		t.Fatal(err)
	}

	e.write(t, 5*65536, "second")
	s2, r2 := e.snapshot(t, "b2")
	if err, _ := e.upload(s2, r2); err != nil {
		t.Fatalf("second upload: %v", err)
	}
	m2, err := e.repo.Manifest(e.ctx, "ns/pvc", "b2")
	if err != nil || m2.ParentID != "b1" {
		t.Fatalf("second manifest %+v, %v: want parent b1", m2, err)
	}

	// Only its writer lease (pending/) may be written: no block or manifest.
	e.store.FailKeys(storetest.OpPut, func(k string) bool { return !strings.HasPrefix(k, "pending/") },
		errors.New("an upload already committed put an object again"))
	if err, _ := e.upload(s2, r2); err != nil {
		t.Fatalf("upload after its commit: %v", err)
	}
}

// TestUploadPermanentFailure: a refused access is not retried: the upload
// fails at once with store.ErrAccessDenied (recorded by the caller),
// well before the first retry's wait of a second.
func TestUploadPermanentFailure(t *testing.T) {
	e := newUploadEnv(t)
	s1, r1 := e.snapshot(t, "b1")
	e.store.Add(storetest.Fault{Op: storetest.OpPut, Err: fmt.Errorf("put: %w", store.ErrAccessDenied)})
	err, took := e.upload(s1, r1)
	if !errors.Is(err, store.ErrAccessDenied) || !Permanent(err) {
		t.Fatalf("upload without access: %v, want ErrAccessDenied", err)
	}
	if e.opens != 1 || took > 900*time.Millisecond {
		t.Errorf("a permanent failure was retried: %d attempts in %s", e.opens, took)
	}
	if Of(s1).Upload != Uploading {
		t.Errorf("Upload changed the record itself: %+v", Of(s1))
	}
}

// TestPermanent: unreachable targets are never permanent, whatever else
// the error wraps; bad input and refused access are.
func TestPermanent(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("x: %w", target.ErrUnknownTarget), true},
		{fmt.Errorf("x: %w", store.ErrAccessDenied), true},
		{fmt.Errorf("x: %w", backend.ErrInvalid), true},
		{fmt.Errorf("x: %w: %w", store.ErrTransient, store.ErrAccessDenied), false},
		{fmt.Errorf("x: %w", s3chain.ErrChainBusy), false},
		{errors.New("connection reset by peer"), false},
	} {
		if got := Permanent(tc.err); got != tc.want {
			t.Errorf("Permanent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestFinal: an upload fails for good (recorded refused, never retried)
// only when the snapshot can never go into its chain: larger than the
// chain holds, or a bad chain name. What an operator can fix (access, the
// key, a block size asked for) is Permanent for one upload's attempts but
// not Final; every Final error is Permanent (issue 24).
func TestFinal(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("backup: %w: 2 bytes is more than chain holds", s3chain.ErrVolumeTooLarge), true},
		{fmt.Errorf("x: %w", s3chain.ErrInvalidChain), true},
		{fmt.Errorf("x: %w: block size differs", s3chain.ErrInvalidOptions), false},
		{fmt.Errorf("x: %w", store.ErrAccessDenied), false},
		{fmt.Errorf("x: %w", s3chain.ErrWrongKey), false},
		{fmt.Errorf("x: %w", store.ErrTransient), false},
	} {
		if got := Final(tc.err); got != tc.want || got && !Permanent(tc.err) {
			t.Errorf("Final(%v) = %v (Permanent %v), want %v", tc.err, got, Permanent(tc.err), tc.want)
		}
	}
}

// TestUploadOfDecidedIDIsFinal: in a chain with state records an id is
// never reused (FORMAT.md §7.5). An upload whose manifest was left unready
// and then voided by a gc (the driver down for longer than the gc's
// min-age, or the target unreachable through the confirm) can never be
// committed under its snapshot's backup id again: the upload fails for
// good at once (recorded refused, FailedPrecondition) instead of being
// retried under the same id by every CreateSnapshot for ever.
func TestUploadOfDecidedIDIsFinal(t *testing.T) {
	e := newUploadEnv(t)
	s1, r1 := e.snapshot(t, "b1")
	isState := func(k string) bool { return strings.HasSuffix(k, ".state") }
	e.store.FailKeys(storetest.OpPutIfAbsent, isState, fmt.Errorf("put: %w", store.ErrAccessDenied))
	if err, _ := e.upload(s1, r1); !errors.Is(err, store.ErrAccessDenied) {
		t.Fatalf("upload whose ready record is refused: %v", err)
	}
	e.store.Clear()
	st, err := e.repo.GC(e.ctx, s3chain.GCOptions{Chain: r1.Chain})
	if err != nil || st.VoidedBackups != 1 {
		t.Fatalf("gc: %+v, %v: want the unready manifest voided", st, err)
	}
	e.opens = 0
	err, _ = e.upload(s1, r1)
	if !errors.Is(err, s3chain.ErrBackupExists) || !Final(err) || !Permanent(err) {
		t.Fatalf("upload under a voided id: %v (Final %v, Permanent %v), want a final ErrBackupExists", err, Final(err), Permanent(err))
	}
	if e.opens != 1 {
		t.Errorf("upload under a voided id tried %d times, want 1", e.opens)
	}
}
