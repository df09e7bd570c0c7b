package volume

import (
	"bytes"
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

// restoreEnv is a Manager over a real pool and a chain with one backup of
// a 1 MiB block volume in a fault-injecting in-memory store.
type restoreEnv struct {
	ctx   context.Context
	m     *Manager
	pool  *backend.FilePool
	store *storetest.Faulty
	repo  *s3chain.Repo
	ref   target.Ref
	man   *s3chain.Manifest
	data  []byte
}

func newRestoreEnv(t *testing.T) *restoreEnv {
	t.Helper()
	e := &restoreEnv{ctx: context.Background(), pool: testPool(t), store: storetest.NewFaulty(storetest.NewMem())}
	e.m = NewManager(e.pool, Config{StateDir: t.TempDir(), Node: "node-1"})
	var err error
	if e.repo, err = s3chain.NewRepo(e.store, s3chain.RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	src, err := e.pool.Create(e.ctx, backend.CreateOptions{Name: "src", Kind: backend.KindVolume, SizeBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	e.data = bytes.Repeat([]byte("chainvol"), (1<<20)/8)
	for i := 0; i < len(e.data); i += 65536 { // distinct blocks, one of them zero
		copy(e.data[i:], fmt.Sprintf("block %d", i/65536))
	}
	clear(e.data[3*65536 : 4*65536])
	path, _ := e.pool.DataPath(src.ID)
	if err := os.WriteFile(path, e.data, 0o600); err != nil {
		t.Fatal(err)
	}
	e.man, _, err = e.repo.Backup(e.ctx, s3chain.BackupOptions{Chain: "ns/pvc", Source: path, SizeBytes: 1 << 20,
		BlockSize: s3chain.MinBlockSize, VolumeMode: s3chain.VolumeModeBlock})
	if err != nil {
		t.Fatal(err)
	}
	e.ref = target.Ref{Target: "t", Chain: "ns/pvc", Backup: e.man.ID}
	return e
}

// reserve admits a restore of the backup as a new lvol recorded
// Restoring, as the CSI shell does before any block is fetched.
func (e *restoreEnv) reserve(t *testing.T, name string) backend.LVol {
	t.Helper()
	lv, err := e.m.Admit(e.ctx, backend.CreateOptions{Name: name, Kind: backend.KindVolume, SizeBytes: e.man.SizeBytes},
		Record{AccessType: AccessBlock, Phase: PhaseRestoring, RestoreRef: RefOf(e.ref), RestoredFrom: RefOf(e.ref)}, e.man.AllocatedBytes)
	if err != nil {
		t.Fatal(err)
	}
	if r := Of(lv); r.Phase != PhaseRestoring || r.RestoreAllocBytes != e.man.AllocatedBytes {
		t.Fatalf("reserved record %+v", r)
	}
	return lv
}

// restore runs Manager.Restore in a job and returns its error.
func (e *restoreEnv) restore(lv backend.LVol, open func(context.Context) (*s3chain.Repo, error)) (*Job, error) {
	j := e.m.StartJob("restore:"+lv.Name, "restore of "+e.ref.String(), func(ctx context.Context, j *Job) error {
		return e.m.replay(ctx, j, lv, e.ref, nil, open)
	})
	<-j.Done()
	return j, j.Err()
}

func isBlock(key string) bool { return strings.HasPrefix(key, "blocks/") }

// TestRestoreWaitsOutAnOutage: a target that answers "try later" pauses
// the restore, which opens the target once, tries again from its
// checkpoint, then fills the volume byte for byte and records it Ready
// (the reservation's allocation cleared, the checkpoint gone).
func TestRestoreWaitsOutAnOutage(t *testing.T) {
	e := newRestoreEnv(t)
	lv := e.reserve(t, "pvc-1")
	e.store.Add(storetest.Fault{Op: storetest.OpGet, Key: isBlock, Nth: 3,
		Err: fmt.Errorf("%w: 503 Slow Down", store.ErrTransient)})
	opens := 0
	j, err := e.restore(lv, func(context.Context) (*s3chain.Repo, error) { opens++; return e.repo, nil })
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if opens != 1 {
		t.Errorf("the target was opened %d times, want once per restore", opens)
	}
	if !strings.Contains(j.Message(), "1.0 MiB of 1.0 MiB") {
		t.Errorf("final progress %q", j.Message())
	}
	got, err := e.pool.Get(e.ctx, lv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r := Of(got); !r.Ready() || r.RestoreAllocBytes != 0 || r.RestoreRef != RefOf(e.ref) {
		t.Errorf("record after restore %+v", r)
	}
	path, _ := e.pool.DataPath(lv.ID)
	if b, _ := os.ReadFile(path); !bytes.Equal(b, e.data) {
		t.Error("restored data differs from the backup's source")
	}
	if _, err := os.Stat(e.m.CheckpointPath(lv.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("checkpoint left after the restore: %v", err)
	}
}

// TestRestoreFailsOnCorruptBlock: a block that fails its digest is final
// (no retry can heal it): Restore returns s3chain.ErrCorruptBlock at once,
// not as an outage, and the volume stays unready.
func TestRestoreFailsOnCorruptBlock(t *testing.T) {
	e := newRestoreEnv(t)
	lv := e.reserve(t, "pvc-2")
	e.store.CorruptGets(isBlock)
	_, err := e.restore(lv, func(context.Context) (*s3chain.Repo, error) { return e.repo, nil })
	if !errors.Is(err, s3chain.ErrCorruptBlock) || Unreachable(err) {
		t.Fatalf("restore of a corrupt block: %v, want ErrCorruptBlock", err)
	}
	if _, err := e.m.Ready(e.ctx, backend.KindVolume, lv.ID); !errors.Is(err, ErrNotReady) {
		t.Errorf("volume of a failed restore: %v, want ErrNotReady", err)
	}
}

// TestRestoreStopsWithItsJob: stopping the job (DeleteVolume during a
// restore) ends a restore paused on an unreachable target with
// context.Canceled, within the wait.
func TestRestoreStopsWithItsJob(t *testing.T) {
	e := newRestoreEnv(t)
	lv := e.reserve(t, "pvc-3")
	e.store.Add(storetest.Fault{Op: storetest.OpGet, Key: isBlock, Err: fmt.Errorf("%w: connection reset", store.ErrTransient)})
	waiting := make(chan struct{})
	j := e.m.StartJob("restore:"+lv.Name, "restore of "+e.ref.String(), func(ctx context.Context, j *Job) error {
		return e.m.replay(ctx, j, lv, e.ref, e.repo, func(context.Context) (*s3chain.Repo, error) {
			t.Error("a restore given its repository opened the target again")
			return e.repo, nil
		})
	})
	go func() {
		for !strings.Contains(j.Message(), "waiting for target") {
			select {
			case <-j.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		close(waiting)
	}()
	<-waiting
	e.m.StopJob("restore:" + lv.Name)
	if err := j.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped restore: %v, want context.Canceled", err)
	}
}

// TestAdmitRefusesWhatThePoolCannotHold: a restore whose blocks would not
// fit above the reserve, with the running restores' pending bytes
// counted, is refused before any lvol exists (backend.ErrNoSpace).
func TestAdmitRefusesWhatThePoolCannotHold(t *testing.T) {
	e := newRestoreEnv(t)
	free, err := e.m.Free(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.m.Admit(e.ctx, backend.CreateOptions{Name: "huge", Kind: backend.KindVolume, SizeBytes: 1 << 20},
		Record{Phase: PhaseRestoring}, free+1)
	if !errors.Is(err, backend.ErrNoSpace) {
		t.Fatalf("admission of %d bytes with %d free: %v, want ErrNoSpace", free+1, free, err)
	}
	if _, err := e.pool.GetByName(e.ctx, backend.KindVolume, "huge"); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("a refused restore left an lvol: %v", err)
	}
	lv := e.reserve(t, "pvc-4")
	after, err := e.m.Free(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := free - e.man.AllocatedBytes; after > want {
		t.Errorf("free after admitting %d bytes: %d, want at most %d (%s)", e.man.AllocatedBytes, after, want, lv.ID)
	}
}
