package volume

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/backend"
)

const chunk = 4 << 20 // the tests' unit of writing, in bytes

// spacePool opens a pool on a real reflink XFS loop filesystem of size
// bytes and a Manager on it whose space watch runs for the test.
func spacePool(t *testing.T, size int64) (*backend.FilePool, *Manager) {
	t.Helper()
	testutil.RequireRoot(t)
	pool, err := backend.Open(filepath.Join(testutil.LoopFS(t, "xfs", size), "pool"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	m := NewManager(pool, Config{StateDir: t.TempDir(), Node: "node-1"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.WatchSpace(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return pool, m
}

// someData is a chunk of data: its content does not matter to XFS's
// allocation (no compression, no deduplication), only that it is written.
var someData = bytes.Repeat([]byte("chainvol"), chunk/8)

// writeChunks writes n chunks into lvol id from chunk first, as an
// application does through its loop device, and syncs them.
func writeChunks(pool backend.Pool, id string, first, n int) error {
	path, err := pool.DataPath(id)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	for i := first; i < first+n; i++ {
		if _, err := f.WriteAt(someData, int64(i)*chunk); err != nil {
			return err
		}
	}
	return f.Sync()
}

// allocated is lvol id's allocated bytes (st_blocks): what a reflink copy
// of it may cost.
func allocated(t *testing.T, pool backend.Pool, id string) int64 {
	t.Helper()
	path, _ := pool.DataPath(id)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Blocks * 512
}

// takeBase makes an uploaded, reported backup base of volume v.
func takeBase(t *testing.T, m *Manager, v backend.LVol, name string) backend.LVol {
	t.Helper()
	rec := Record{Hidden: true, BackupRef: ReadID("backup:offsite:" + name + "@1"), Upload: Uploaded, UploadDoneAt: time.Now().UTC()}
	b, err := m.CreateSnapshot(context.Background(), backend.CreateOptions{Name: name, SourceID: v.ID}, rec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBaseDroppedBeforeENOSPC is issue 25's example: a volume's backup
// base diverges as the application rewrites its data while another volume
// fills the pool. The base is dropped (and counted) before the reserve is
// touched, so no write fails; Free counted the base's cost while it lived.
func TestBaseDroppedBeforeENOSPC(t *testing.T) {
	ctx := context.Background()
	pool, m := spacePool(t, 2<<30)
	newVol := func(name string) backend.LVol {
		lv, err := pool.Create(ctx, backend.CreateOptions{Name: name, Kind: backend.KindVolume, SizeBytes: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		return lv
	}
	v, w := newVol("v"), newVol("w")
	if err := writeChunks(pool, v.ID, 0, 225); err != nil { // 900 MiB
		t.Fatal(err)
	}
	before, _ := m.Free(ctx)
	b := takeBase(t, m, v, "b")
	if after, _ := m.Free(ctx); after > before-allocated(t, pool, v.ID)+chunk {
		t.Errorf("Free with the base = %d, without %d: the base's cost is not counted", after, before)
	}
	if err := writeChunks(pool, w.ID, 0, 150); err != nil { // 600 MiB of new data
		t.Fatalf("write w: %v", err)
	}
	if err := writeChunks(pool, v.ID, 0, 225); err != nil { // v diverges from its base
		t.Fatalf("rewrite v: %v (bases dropped: %d)", err, m.BasesDroppedForSpace())
	}
	if _, err := pool.Get(ctx, b.ID); err == nil {
		t.Error("the base outlived the pool's space")
	}
	if n := m.BasesDroppedForSpace(); n != 1 {
		t.Errorf("BasesDroppedForSpace = %d, want 1", n)
	}
}

// spaceModel is the property test's view of the pool: which chunks of each
// lvol hold data (a clone or snapshot inherits its source's).
type spaceModel struct {
	t     *testing.T
	pool  *backend.FilePool
	m     *Manager
	rng   *rand.Rand
	vols  []backend.LVol // writable
	snaps []backend.LVol // local snapshots and bases, never written
	data  map[string]map[int]bool
	n     int // names made
	// writes, refused: new data written, and refused for want of room.
	writes, refused int
}

const modelChunks = 48 // chunks per volume (192 MiB)

// free is what the Manager says new data may still take (GetCapacity).
func (s *spaceModel) free() int64 {
	f, err := s.m.Free(context.Background())
	if err != nil {
		s.t.Fatal(err)
	}
	return f
}

// step runs one random operation, made only when Free said there was room
// for what it may cost: new data its size, a reflink copy its source's
// allocated bytes; a rewrite of data an lvol holds is always allowed.
func (s *spaceModel) step() {
	if len(s.vols) == 0 {
		s.create("", backend.KindVolume, false)
		return
	}
	v := s.vols[s.rng.IntN(len(s.vols))]
	switch k := s.rng.IntN(20); {
	case k < 1:
		if len(s.vols) < 4 {
			s.create("", backend.KindVolume, false)
		}
	case k < 6:
		s.newData(v, s.rng.IntN(modelChunks))
	case k < 13:
		s.rewrite(v, 1+s.rng.IntN(8))
	case k < 17:
		s.create(v.ID, backend.KindSnapshot, k >= 15)
	case k < 19:
		if all := append(s.vols[:len(s.vols):len(s.vols)], s.snaps...); len(s.vols) < 10 {
			s.create(all[s.rng.IntN(len(all))].ID, backend.KindVolume, false)
		}
	case len(s.snaps) > 0:
		i := s.rng.IntN(len(s.snaps))
		if err := s.pool.Delete(context.Background(), s.snaps[i].ID); err != nil && !errors.Is(err, backend.ErrNotFound) {
			s.t.Fatal(err)
		}
		s.snaps = append(s.snaps[:i], s.snaps[i+1:]...)
	}
}

// rewrite rewrites up to n of the chunks v holds, in a random order.
func (s *spaceModel) rewrite(v backend.LVol, n int) {
	for c := range s.data[v.ID] {
		if n--; n < 0 {
			return
		}
		s.write(v, c, "a rewrite")
	}
}

// newData writes chunk c of v if it holds no data yet and Free has room.
func (s *spaceModel) newData(v backend.LVol, c int) {
	switch {
	case s.data[v.ID][c]:
	case s.free() >= chunk:
		s.write(v, c, "new data")
		s.writes++
	default:
		s.refused++
	}
}

// write writes chunk c of v and fails the test on any error.
func (s *spaceModel) write(v backend.LVol, c int, what string) {
	free := s.free()
	if err := writeChunks(s.pool, v.ID, c, 1); err != nil {
		s.t.Fatalf("%s into %s (chunk %d) with %d bytes free by Free: %v (bases dropped: %d)",
			what, v.ID, c, free, err, s.m.BasesDroppedForSpace())
	}
	s.data[v.ID][c] = true
}

// create makes a volume (a clone when src is set) or a snapshot of src (a
// backup base when base), when Free covers what the copy may cost.
func (s *spaceModel) create(src string, k backend.Kind, base bool) {
	ctx := context.Background()
	if src != "" && s.free() < allocated(s.t, s.pool, src) {
		return
	}
	if _, err := s.pool.Get(ctx, src); src != "" && err != nil {
		return // a base dropped for space
	}
	s.n++
	name := "x" + strconv.Itoa(s.n)
	var lv backend.LVol
	var err error
	switch {
	case k == backend.KindVolume:
		lv, err = s.pool.Create(ctx, backend.CreateOptions{Name: name, Kind: k, SizeBytes: modelChunks * chunk, SourceID: src})
		s.m.SpaceChanged()
	case base:
		lv, err = s.m.CreateSnapshot(ctx, backend.CreateOptions{Name: name, SourceID: src},
			Record{Hidden: true, BackupRef: ReadID("backup:offsite:" + name + "@1"), Upload: Uploaded, UploadDoneAt: time.Now().UTC()})
	default:
		lv, err = s.m.CreateSnapshot(ctx, backend.CreateOptions{Name: name, SourceID: src}, Record{})
	}
	if err != nil {
		s.t.Fatal(err)
	}
	s.data[lv.ID] = maps.Clone(s.data[src])
	if s.data[lv.ID] == nil {
		s.data[lv.ID] = map[int]bool{}
	}
	if k == backend.KindVolume {
		s.vols = append(s.vols, lv)
	} else {
		s.snaps = append(s.snaps, lv)
	}
}

// TestSpaceHolds is the property: on a small real XFS pool, random writes
// into volumes with backup bases, snapshots and clones, each new byte and
// each reflink copy made only when Free (what GetCapacity reports) said
// there was room for it, never meet ENOSPC; rewrites of data a volume
// holds never do either (bases are dropped for them).
func TestSpaceHolds(t *testing.T) {
	pool, m := spacePool(t, 1<<30)
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("SPACE_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (SPACE_SEED)", seed)
	s := &spaceModel{t: t, pool: pool, m: m, rng: rand.New(rand.NewPCG(seed, 0)), data: map[string]map[int]bool{}}
	for range 1000 {
		s.step()
	}
	c, _ := pool.Capacity(context.Background())
	t.Logf("%d volumes, %d snapshots, %d chunks of new data written, %d refused, %d bytes available, %d bases dropped",
		len(s.vols), len(s.snaps), s.writes, s.refused, c.AvailableBytes, m.BasesDroppedForSpace())
}

// TestReflinkMadeBound: a snapshot adds its source's allocated bytes to
// the watch's bound (ReflinkMade) without a measure of the pool while the
// bound leaves the reserve whole; SpaceChanged measures (the bound is
// cleared); a bound that could take the pool below its reserve is
// measured at the watch's next period, and the bases that break it are
// dropped as before.
func TestReflinkMadeBound(t *testing.T) {
	ctx := context.Background()
	pool, m := spacePool(t, 2<<30)
	v, err := pool.Create(ctx, backend.CreateOptions{Name: "v", Kind: backend.KindVolume, SizeBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	mustOK := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mustOK(writeChunks(pool, v.ID, 0, 25)) // 100 MiB
	time.Sleep(3 * spaceWatchEvery)        // the watch's first measure is done
	takeBase(t, m, v, "small")
	time.Sleep(3 * spaceWatchEvery)
	if got, want := m.debtBound.Load(), allocated(t, pool, v.ID); got != want {
		t.Fatalf("bound after a snapshot = %d, want the source's %d allocated bytes, not measured", got, want)
	}
	waitBound := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); m.debtBound.Load() != 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: bound still %d: the watch did not measure", what, m.debtBound.Load())
			}
		}
	}
	m.SpaceChanged()
	waitBound("SpaceChanged")
	mustOK(writeChunks(pool, v.ID, 25, 200)) // 900 MiB in all: two bases could cost 1.8 GiB
	takeBase(t, m, v, "big-1")
	takeBase(t, m, v, "big-2")
	waitBound("a bound past the reserve")
	if n := m.BasesDroppedForSpace(); n == 0 {
		t.Error("no base dropped though two of 900 MiB could not be paid")
	}
}
