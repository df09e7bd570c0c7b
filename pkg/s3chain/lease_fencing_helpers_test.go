package s3chain_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// fenceBS is the block size of the fencing tests: the smallest allowed.
const fenceBS = s3chain.MinBlockSize

// fenceWorld is one fencing scenario: a store several actors share, each
// through its own view (its network, with its own gates), and the
// backups reported ready, which must all restore at the end.
type fenceWorld struct {
	t     *testing.T
	root  *storetest.Faulty // the store itself, and its clock
	dir   string
	chain string
	ttl   time.Duration

	mu    sync.Mutex // actors back up concurrently
	files int
	ready []fenceReady
}

type fenceReady struct{ id, sha string }

func newFenceWorld(t *testing.T, ttl time.Duration, root *storetest.Faulty) *fenceWorld {
	if root == nil {
		root = storetest.NewFaulty(storetest.NewMem())
	}
	return &fenceWorld{t: t, root: root, dir: t.TempDir(), chain: "lab/fence", ttl: ttl}
}

// actor returns a new client of the store: its own view and Repo.
func (fw *fenceWorld) actor() (*storetest.Faulty, *s3chain.Repo) {
	v := fw.root.View()
	r, err := s3chain.NewRepo(v, s3chain.RepoOptions{LeaseTTL: fw.ttl})
	if err != nil {
		fw.t.Fatal(err)
	}
	return v, r
}

// image returns n distinct random blocks drawn from seed.
func (fw *fenceWorld) image(seed uint64, n int) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 24))
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, fenceBS)
		for j := range out[i] {
			out[i][j] = byte(rng.Uint32())
		}
	}
	return out
}

// backup backs image up with repo (on parent, if any) and records it as
// ready when Backup says so.
func (fw *fenceWorld) backup(repo *s3chain.Repo, image [][]byte, parent string) (*s3chain.Manifest, error) {
	fw.mu.Lock()
	fw.files++
	path := filepath.Join(fw.dir, fmt.Sprintf("src%d", fw.files))
	fw.mu.Unlock()
	data := slices.Concat(image...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		fw.t.Fatal(err)
	}
	defer os.Remove(path)
	m, _, err := repo.Backup(context.Background(), s3chain.BackupOptions{Chain: fw.chain, Source: path,
		BlockSize: fenceBS, Parent: parent, Workers: 2})
	if err == nil {
		fw.mu.Lock()
		fw.ready = append(fw.ready, fenceReady{m.ID, sha(data)})
		fw.mu.Unlock()
	}
	return m, err
}

// mustBackup is backup failing the test on an error.
func (fw *fenceWorld) mustBackup(repo *s3chain.Repo, image [][]byte, parent string) *s3chain.Manifest {
	fw.t.Helper()
	m, err := fw.backup(repo, image, parent)
	if err != nil {
		fw.t.Fatalf("backup: %v", err)
	}
	return m
}

// delete deletes backup id, which then need not restore.
func (fw *fenceWorld) delete(repo *s3chain.Repo, id string) {
	fw.t.Helper()
	if err := repo.DeleteBackup(context.Background(), fw.chain, id); err != nil {
		fw.t.Fatalf("delete %s: %v", id, err)
	}
	fw.ready = slices.DeleteFunc(fw.ready, func(r fenceReady) bool { return r.id == id })
}

// checkReady checks the invariant of issue 24 with a fresh, fault-free
// Repo: every backup reported ready is listed, verifies and restores
// byte-identically. defect names the scenario in the failures.
func (fw *fenceWorld) checkReady(defect string) {
	fw.t.Helper()
	ctx := context.Background()
	repo, _ := s3chain.NewRepo(fw.root, s3chain.RepoOptions{LeaseTTL: fw.ttl})
	listed := map[string]bool{}
	ms, err := repo.Backups(ctx, fw.chain)
	if err != nil {
		fw.t.Errorf("%s: listing the chain: %v", defect, err)
	}
	for _, m := range ms {
		listed[m.ID] = true
	}
	for _, r := range fw.ready {
		if !listed[r.id] && err == nil {
			fw.t.Errorf("%s: ready backup %s is not listed (%d listed)", defect, r.id, len(ms))
		}
		if verr := repo.Verify(ctx, fw.chain, r.id, true); verr != nil {
			fw.t.Errorf("%s: ready backup %s does not verify (%s): %v", defect, r.id, fw.missing(repo, r), verr)
		}
		dest := filepath.Join(fw.dir, "restore-"+r.id)
		_, _, rerr := repo.Restore(ctx, s3chain.RestoreOptions{Chain: fw.chain, BackupID: r.id, Destination: dest})
		if got := readSHA(dest); rerr != nil {
			fw.t.Errorf("%s: ready backup %s does not restore: %v", defect, r.id, rerr)
		} else if got != r.sha {
			fw.t.Errorf("%s: ready backup %s restores other bytes: sha %s, want %s", defect, r.id, got, r.sha)
		}
		os.Remove(dest)
	}
}

// missing says how many of the blocks of ready backup r have no object at
// their gen-0 key (only a count: a protocol may keep other copies).
func (fw *fenceWorld) missing(repo *s3chain.Repo, r fenceReady) string {
	m, err := repo.Manifest(context.Background(), fw.chain, r.id)
	if err != nil {
		return "manifest: " + err.Error()
	}
	gone := 0
	for _, b := range m.Blocks {
		if _, err := fw.root.Stat(context.Background(), s3chain.BlockKey(fw.chain, b.Digest)); err != nil {
			gone++
		}
	}
	return fmt.Sprintf("%d of %d blocks missing at their gen-0 keys", gone, len(m.Blocks))
}

// isBlock, isConfig and isLock(kind) match keys of fw's chain.
func (fw *fenceWorld) isBlock(k string) bool {
	return strings.HasPrefix(k, s3chain.BlockPrefix(fw.chain))
}

func (fw *fenceWorld) isConfig(k string) bool { return k == "chains/"+fw.enc()+".json" }

func (fw *fenceWorld) isLock(kind string) func(string) bool {
	prefix := "pending/" + fw.enc() + "/" + kind + "-"
	return func(k string) bool { return strings.HasPrefix(k, prefix) }
}

// enc is the chain's name as its keys spell it.
func (fw *fenceWorld) enc() string {
	return strings.TrimSuffix(strings.TrimPrefix(s3chain.BlockPrefix(fw.chain), "blocks/"), "/")
}

// waitStale waits until every lock matching match, by the store's clock,
// was last written more than a TTL and a quarter ago (its holder is paused:
// nothing refreshes it meanwhile).
func (fw *fenceWorld) waitStale(match func(string) bool) {
	var newest time.Time
	_ = fw.root.List(context.Background(), "pending/", func(oi store.ObjectInfo) error {
		if match(oi.Key) && oi.ModTime.After(newest) {
			newest = oi.ModTime
		}
		return nil
	})
	if !newest.IsZero() {
		time.Sleep(time.Until(newest.Add(fw.ttl + fw.ttl/4 - fw.root.ClockShift())))
	}
}

// actorRun is an actor's call running in its own goroutine.
type actorRun struct {
	done chan struct{}
	err  error
}

func start(fn func() error) *actorRun {
	a := &actorRun{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		a.err = fn()
	}()
	return a
}

// wait waits (at most 10 s) for the actor to finish and returns its error.
func (a *actorRun) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-a.done:
		return a.err
	case <-time.After(10 * time.Second):
		t.Fatal("an actor did not finish within 10 s")
		return nil
	}
}

// reach waits for the next call at g, at most timeout and only while a
// runs: false when a finished (or the time ran out) without making the
// call, as a protocol that does not make it may.
func reach(t *testing.T, g *storetest.Gate, a *actorRun, timeout time.Duration) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		select {
		case <-a.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	k, err := g.Await(ctx)
	if err != nil {
		t.Logf("no call reached the gate: %v (actor done: %v)", err, errors.Is(ctx.Err(), context.Canceled))
		return "", false
	}
	return k, true
}

// digestOf returns the digest of m's block whose gen-0 key is key, and its
// index ("", -1: none).
func digestOf(m *s3chain.Manifest, chain, key string) (string, int64) {
	for _, b := range m.Blocks {
		if s3chain.BlockKey(chain, b.Digest) == key {
			return b.Digest, b.Index
		}
	}
	return "", -1
}
