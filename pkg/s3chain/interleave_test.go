package s3chain_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// The chain protocol's invariant, checked after every schedule of random
// concurrent backups, deletes, gcs and restores by several writers (each
// with its own Repo and faults, as separate processes or nodes would be)
// on one chain: every backup reported ready and not deleted restores
// byte-identically, no restore ever returns other bytes, and once
// everything is deleted and locks expire, gc leaves no block and no lock.
// In a chain with state records (every chain but the version-1 seeds,
// FORMAT.md §7.4) every listed backup is one that reported ready or whose
// ready record landed (a lost answer), and restores byte-identically to
// an image that was backed up: listed means restorable.
// Schedules also pause requests between an actor's check and its effect
// (held at a gate, released after a random delay, landing late when their
// caller gave up) and step the store's clock (interleave_pause_test.go);
// the invariants are checked once every held request was released.
//
// CHAINVOL_SCHEDULES sets the number of schedules (default 2000 on the
// in-memory store); CHAINVOL_SEED the first seed (default: the time).

const (
	ilBlock   = s3chain.MinBlockSize // 64 KiB
	ilChain   = "app/db"
	ilWriters = 3
	ilOps     = 4
)

// world is the shared state of one schedule.
type world struct {
	t     *testing.T
	dir   string
	store *storetest.Faulty // the shared store; each writer has a view of it
	pool  [][]byte          // block contents images are drawn from (heavy dedup)
	ttl   time.Duration
	seed  uint64

	lock store.LockPolicy // Object Lock of the store (interleave_lock_test.go); zero: none

	mu      sync.Mutex
	ready   map[string]readyBackup // by id + "@" + createdAt
	deleted map[string]time.Time   // id -> end of the last DeleteBackup of it (successful or not: a lost answer may hide a success)
	bad     []string
	gates   []*storetest.Gate // every pause of the schedule
	shift   time.Duration     // the largest clock shift the store had
	images  map[string]bool   // the sha of every image a backup was tried of
	v1      bool              // the chain was seeded as version 1 (no state records)
}

type readyBackup struct {
	id      string
	created time.Time
	sha     string
	size    int64
}

func (w *world) violation(format string, a ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bad = append(w.bad, fmt.Sprintf(format, a...))
}

func readyKey(id string, at time.Time) string { return id + "@" + at.Format(time.RFC3339Nano) }

func TestChainProtocolInterleavings(t *testing.T) {
	n := envInt("CHAINVOL_SCHEDULES", 2000)
	seed := uint64(envInt("CHAINVOL_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("%d schedules from seed %d (CHAINVOL_SEED=%d reproduces)", n, seed, seed)
	parallel(t, n, func(k int) {
		runSchedule(t, storetest.NewFaulty(storetest.NewMem()), seed+uint64(k), 80*time.Millisecond, k%2 == 1)
	})
}

// parallel runs n schedules, 16 at a time (they mostly wait on leases).
func parallel(t *testing.T, n int, run func(k int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for k := range next {
				run(k)
			}
		})
	}
	for k := 0; k < n && !t.Failed(); k++ {
		next <- k
	}
	close(next)
	wg.Wait()
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// runSchedule runs one schedule from seed on store and checks the
// invariant; faults adds stalls and kills to the random errors and delays.
func runSchedule(t *testing.T, st *storetest.Faulty, seed uint64, ttl time.Duration, faults bool) {
	rng := rand.New(rand.NewPCG(seed, 1))
	w := &world{t: t, dir: t.TempDir(), store: st, ttl: ttl, seed: seed, lock: st.LockPolicy(),
		ready: map[string]readyBackup{}, deleted: map[string]time.Time{}, images: map[string]bool{}}
	w.v1 = seed%3 == 0 && !w.lock.Enabled() // version 1 rewrote manifests, which a lock forbids
	for range 6 {
		b := make([]byte, ilBlock)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		w.pool = append(w.pool, b)
	}
	if w.v1 {
		w.seedV1(rng)
	}
	var wg sync.WaitGroup
	for i := range ilWriters {
		wr := w.newWriter(i, rng.Uint64(), faults)
		wg.Go(func() { wr.run() })
	}
	wg.Wait()
	w.releaseAll()
	w.check()
	w.checkLocked()
	w.checkListed()
	w.settleClock()
	w.drain()
	for _, b := range w.bad {
		t.Errorf("seed %d: %s", seed, b)
	}
}

// seedV1 starts the chain as format version 1 left it: three hash-linked
// delta backups, recorded as ready.
func (w *world) seedV1(rng *rand.Rand) {
	ctx := context.Background()
	// A long lease: the seed must not fail on a loaded machine.
	repo, _ := s3chain.NewRepo(w.store, s3chain.RepoOptions{LeaseTTL: time.Minute})
	if err := s3chain.CreateV1ConfigForTest(ctx, repo, ilChain, ilBlock); err != nil {
		w.violation("v1 seed: %v", err)
		return
	}
	wr := &writer{w: w, rng: rng, repo: repo}
	for op := range 3 {
		wr.backup(100 + op)
	}
	if err := s3chain.DowngradeChainForTest(ctx, repo, ilChain); err != nil {
		w.violation("v1 seed: %v", err)
	}
}

// writer is one process: its own Repo over its own faulty view.
type writer struct {
	w      *world
	n      int
	rng    *rand.Rand
	chaos  *chaosStore
	view   *storetest.Faulty // its network: pauses are installed here
	repo   *s3chain.Repo
	faults bool
}

func (w *world) newWriter(n int, seed uint64, faults bool) *writer {
	p := 0.0
	if faults {
		p = 0.03
	}
	v := w.store.View()
	c := newChaos(v, seed, p, time.Millisecond)
	repo, _ := s3chain.NewRepo(c, s3chain.RepoOptions{LeaseTTL: w.ttl})
	return &writer{w: w, n: n, rng: rand.New(rand.NewPCG(seed, 2)), chaos: c, view: v, repo: repo, faults: faults}
}

func (wr *writer) run() {
	for op := range ilOps {
		wr.disturb()
		switch x := wr.rng.IntN(100); {
		case x < 45:
			wr.backup(op)
		case x < 70:
			wr.delete()
		case x < 85:
			_, _ = wr.repo.GC(context.Background(), s3chain.GCOptions{})
		default:
			wr.restore()
		}
	}
}

// ctx returns a context that, with faults, may be cancelled (a killed
// process) or come with a stall of this writer's requests (a paused one).
func (wr *writer) ctx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	if !wr.faults || wr.chaos == nil {
		return ctx, cancel
	}
	switch wr.rng.IntN(8) {
	case 0:
		time.AfterFunc(time.Duration(wr.rng.Int64N(int64(wr.w.ttl))), cancel)
	case 1:
		d := time.Duration(wr.rng.Int64N(int64(wr.w.ttl)))
		time.AfterFunc(d, func() { wr.chaos.stall(2 * wr.w.ttl) })
	}
	return ctx, cancel
}

func (wr *writer) backup(op int) {
	path := filepath.Join(wr.w.dir, fmt.Sprintf("w%d-%d.img", wr.n, op))
	size := int64(4+wr.rng.IntN(5)) * ilBlock
	if wr.rng.IntN(3) == 0 {
		size -= int64(wr.rng.IntN(ilBlock/4096)) * 4096 // a short last block
	}
	img := make([]byte, size)
	for off := int64(0); off < size; off += ilBlock {
		if k := wr.rng.IntN(len(wr.w.pool) + 2); k < len(wr.w.pool) {
			copy(img[off:], wr.w.pool[k])
		}
	}
	if err := os.WriteFile(path, img, 0o600); err != nil {
		wr.w.violation("write image: %v", err)
		return
	}
	defer os.Remove(path)
	wr.w.mu.Lock()
	wr.w.images[sha(img)] = true
	wr.w.mu.Unlock()
	o := s3chain.BackupOptions{Chain: ilChain, Source: path, BlockSize: ilBlock, Workers: 2}
	if ms, err := wr.repo.Backups(context.Background(), ilChain); err == nil && len(ms) > 0 && wr.rng.IntN(4) > 0 {
		o.Parent = ms[wr.rng.IntN(len(ms))].ID
	}
	if wr.rng.IntN(3) == 0 {
		o.BackupID = fmt.Sprintf("w%d-%d-%d", wr.n, op, wr.rng.IntN(3))
	}
	ctx, cancel := wr.ctx()
	defer cancel()
	if wr.chaos == nil {
		o.Parent = "" // the v1 seed: a plain chain of backups
		if ms, _ := wr.repo.Backups(ctx, ilChain); len(ms) > 0 {
			o.Parent = ms[len(ms)-1].ID
		}
	}
	m, _, err := wr.repo.Backup(ctx, o)
	if err != nil {
		if wr.chaos == nil {
			wr.w.violation("seed backup: %v", err)
		}
		return
	}
	wr.w.mu.Lock()
	wr.w.ready[readyKey(m.ID, m.CreatedAt)] = readyBackup{m.ID, m.CreatedAt, sha(img), size}
	wr.w.mu.Unlock()
}

func (wr *writer) delete() {
	ms, err := wr.repo.Backups(context.Background(), ilChain)
	if err != nil || len(ms) == 0 {
		return
	}
	id := ms[wr.rng.IntN(len(ms))].ID
	ctx, cancel := wr.ctx()
	defer cancel()
	_ = wr.repo.DeleteBackup(ctx, ilChain, id)
	wr.w.mu.Lock()
	wr.w.deleted[id] = time.Now()
	wr.w.mu.Unlock()
}

// restore restores a ready backup; a success must give its bytes.
func (wr *writer) restore() {
	wr.w.mu.Lock()
	var all []readyBackup
	for _, r := range wr.w.ready {
		all = append(all, r)
	}
	wr.w.mu.Unlock()
	if len(all) == 0 {
		return
	}
	slices.SortFunc(all, func(a, b readyBackup) int { return a.created.Compare(b.created) })
	want := all[wr.rng.IntN(len(all))]
	dest := filepath.Join(wr.w.dir, fmt.Sprintf("r%d-%d", wr.n, wr.rng.Int()))
	defer os.Remove(dest)
	m, _, err := wr.repo.Restore(context.Background(), s3chain.RestoreOptions{Chain: ilChain, BackupID: want.id, Destination: dest})
	if err != nil {
		return
	}
	wr.w.mu.Lock()
	got, ok := wr.w.ready[readyKey(m.ID, m.CreatedAt)]
	wr.w.mu.Unlock()
	if !ok {
		return // a backup that never reported ready (failed after its commit)
	}
	if s := readSHA(dest); s != got.sha || m.SizeBytes != got.size {
		wr.w.violation("restore of %s returned other bytes (sha %s, want %s)", m.ID, s, got.sha)
	}
}

// check restores every ready, undeleted backup with a fault-free Repo.
func (w *world) check() {
	repo, _ := s3chain.NewRepo(w.store, s3chain.RepoOptions{})
	ctx := context.Background()
	for _, r := range w.ready {
		if end, ok := w.deleted[r.id]; ok && !end.Before(r.created) {
			continue // a delete of its id ran after it began
		}
		m, err := repo.Manifest(ctx, ilChain, r.id)
		if err != nil {
			w.violation("ready backup %s is gone: %v", r.id, err)
			continue
		}
		if !m.CreatedAt.Equal(r.created) {
			if newer, ok := w.ready[readyKey(m.ID, m.CreatedAt)]; ok && newer.created.After(r.created) {
				continue // deleted, and the id reused by a later backup
			}
			w.violation("ready backup %s@%v was replaced by one of %v", r.id, r.created, m.CreatedAt)
			continue
		}
		if err := repo.Verify(ctx, ilChain, r.id, true); err != nil {
			w.violation("verify of ready backup %s: %v", r.id, err)
		}
		dest := filepath.Join(w.dir, "check-"+r.id)
		if _, _, err := repo.Restore(ctx, s3chain.RestoreOptions{Chain: ilChain, BackupID: r.id, Destination: dest}); err != nil {
			w.violation("restore of ready backup %s: %v", r.id, err)
		} else if s := readSHA(dest); s != r.sha {
			w.violation("restore of ready backup %s: sha %s, want %s", r.id, s, r.sha)
		}
		os.Remove(dest)
	}
}

// checkListed checks, in a chain with state records, that every listed
// backup reported ready (or its ready record landed though its writer
// failed) and restores to the bytes of an image that was backed up.
func (w *world) checkListed() {
	if w.v1 {
		return // every manifest is listed there, ready or not (as before)
	}
	repo, _ := s3chain.NewRepo(w.store, s3chain.RepoOptions{})
	ctx := context.Background()
	for _, m := range w.listed(repo) {
		dest := filepath.Join(w.dir, "listed-"+m.ID)
		if _, _, err := repo.Restore(ctx, s3chain.RestoreOptions{Chain: ilChain, BackupID: m.ID, Destination: dest}); err != nil {
			w.violation("restore of listed backup %s: %v", m.ID, err)
		} else if s := readSHA(dest); !w.images[s] {
			w.violation("restore of listed backup %s: sha %s is no image backed up", m.ID, s)
		}
		os.Remove(dest)
	}
}

// listed returns the chain's backups after the schedule (none, and a
// violation, if it cannot be listed).
func (w *world) listed(repo *s3chain.Repo) []*s3chain.Manifest {
	ms, err := repo.Backups(context.Background(), ilChain)
	if err != nil {
		w.violation("list after the schedule: %v", err)
	}
	return ms
}

// drain deletes every backup, lets abandoned locks expire, collects, and
// checks that nothing is left: no block, no lock.
func (w *world) drain() {
	repo, _ := s3chain.NewRepo(w.store, s3chain.RepoOptions{LeaseTTL: w.ttl})
	ctx := context.Background()
	time.Sleep(w.lockedFor()) // every retention has expired
	for _, m := range w.listed(repo) {
		if err := repo.DeleteBackup(ctx, ilChain, m.ID); err != nil && !errors.Is(err, s3chain.ErrBackupNotFound) {
			w.violation("delete %s after the schedule: %v", m.ID, err)
		}
	}
	time.Sleep(2 * w.ttl) // abandoned locks, also of dropped chains, expire
	// A gc may lose its short lease on a loaded machine: it then stops, and
	// the next one finishes the job.
	var st s3chain.GCStats
	var err error
	for range 5 {
		if st, err = repo.GC(ctx, s3chain.GCOptions{}); err == nil && st.SkippedChains == 0 {
			break
		}
	}
	if err != nil || st.SkippedChains > 0 {
		w.violation("gc after the schedule: %+v, %v", st, err)
	}
	left := 0
	_ = w.store.List(ctx, "", func(oi store.ObjectInfo) error {
		// A doom record stays for good when its gc failed or was killed
		// mid-sweep (FORMAT.md §7): it is not a leak of data.
		if strings.Contains(oi.Key, "/doom-") {
			return nil
		}
		// A state record stays for good, so its id is never taken again
		// (FORMAT.md §7.4): a hundred bytes, no data.
		if strings.HasSuffix(oi.Key, ".state") {
			return nil
		}
		if strings.HasPrefix(oi.Key, "blocks/") || strings.HasPrefix(oi.Key, "pending/") || strings.HasPrefix(oi.Key, "manifests/") {
			left++
			w.violation("left behind: %s", oi.Key)
		}
		return nil
	})
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// readSHA is the hex SHA-256 of a file's bytes ("" if unreadable).
func readSHA(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return sha(b)
}
