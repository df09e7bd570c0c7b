package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// TestChainProtocolS3 runs random schedules of concurrent backups, deletes,
// gcs and restores on the real S3 server, with one writer a separate
// chainvolctl process (sometimes SIGKILLed mid-backup) and two in-process
// Repos, and after each schedule checks that every backup reported ready
// restores byte-identically and that, once all are deleted and the locks
// of killed writers expire, gc leaves no block, lock or manifest behind.
// (The in-memory store runs thousands of such schedules with injected
// faults: pkg/s3chain TestChainProtocolInterleavings.)
func TestChainProtocolS3(t *testing.T) {
	srv := testutil.StartS3(t)
	// S3 timestamps have 1 s resolution: TTL/4 must exceed it (FORMAT.md §7).
	const ttl = 6 * time.Second
	url := srv.URL("protocol")
	env := []string{"CHAINVOL_TARGETS=s3=" + url, "CHAINVOL_ACCESS_KEY_ID=" + srv.AccessKey,
		"CHAINVOL_SECRET_ACCESS_KEY=" + srv.SecretKey, "CHAINVOL_LEASE_TTL=" + ttl.String()}
	open := func() *s3chain.Repo {
		store, err := store.Open(context.Background(), url, store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
		if err != nil {
			t.Fatal(err)
		}
		repo, err := s3chain.NewRepo(store, s3chain.RepoOptions{LeaseTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		return repo
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for k := range 3 {
		s := &s3Schedule{t: t, dir: t.TempDir(), chain: fmt.Sprintf("app/db%d", k), env: env, ttl: ttl,
			rng: rand.New(rand.NewPCG(seed, uint64(k))), ready: map[string]string{}, deleted: map[string]bool{}}
		s.pool()
		var wg sync.WaitGroup
		wg.Go(func() { s.processWriter() })
		for w := range 2 {
			repo := open()
			rng := rand.New(rand.NewPCG(seed+uint64(w), uint64(k)))
			wg.Go(func() { s.repoWriter(repo, rng, w) })
		}
		wg.Wait()
		t.Logf("chain %s: %d backups ready, %d deleted", s.chain, len(s.ready), len(s.deleted))
		s.check(open())
	}
}

// s3Schedule is the state of one schedule on one chain.
type s3Schedule struct {
	t      *testing.T
	dir    string
	chain  string
	env    []string
	ttl    time.Duration
	blocks [][]byte

	mu      sync.Mutex
	rng     *rand.Rand
	ready   map[string]string // backup id -> sha256 of its image
	deleted map[string]bool   // ids a delete was attempted on
}

func (s *s3Schedule) pool() {
	for range 5 {
		b := make([]byte, s3chain.MinBlockSize)
		for i := range b {
			b[i] = byte(s.rng.Uint32())
		}
		s.blocks = append(s.blocks, b)
	}
}

// image writes a volume image of pool blocks and holes; it returns its path
// and sha256.
func (s *s3Schedule) image(rng *rand.Rand, name string) (string, string) {
	n := 3 + rng.IntN(4)
	img := make([]byte, n*int(s3chain.MinBlockSize))
	for i := range n {
		if k := rng.IntN(len(s.blocks) + 1); k < len(s.blocks) {
			copy(img[i*int(s3chain.MinBlockSize):], s.blocks[k])
		}
	}
	path := filepath.Join(s.dir, name)
	if err := os.WriteFile(path, img, 0o600); err != nil {
		s.t.Error(err)
	}
	sum := sha256.Sum256(img)
	return path, hex.EncodeToString(sum[:])
}

func (s *s3Schedule) markReady(id, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ready[id] = sha
}

// processWriter backs up with the chainvolctl binary; one run in three is
// killed with SIGKILL after a random delay.
func (s *s3Schedule) processWriter() {
	s.mu.Lock()
	rng := rand.New(rand.NewPCG(s.rng.Uint64(), 3))
	s.mu.Unlock()
	for op := range 4 {
		path, sum := s.image(rng, fmt.Sprintf("p%d.img", op))
		cmd := exec.Command(binary, "--state-dir", filepath.Join(s.dir, "state"), "backup", "create",
			"--from", path, "--chain", "s3:"+s.chain, "--block-size", fmt.Sprint(s3chain.MinBlockSize), "-o", "json")
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "CHAINVOL_") {
				cmd.Env = append(cmd.Env, e)
			}
		}
		cmd.Env = append(cmd.Env, s.env...)
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			s.t.Error(err)
			return
		}
		if rng.IntN(3) == 0 {
			time.AfterFunc(time.Duration(rng.Int64N(int64(300*time.Millisecond))), func() { _ = cmd.Process.Kill() })
		}
		if err := cmd.Wait(); err != nil {
			continue // killed, or refused (busy): not ready, no promise
		}
		var row struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(out.String()), &row); err != nil || row.ID == "" {
			s.t.Errorf("backup create output %q: %v", out.String(), err)
			continue
		}
		s.markReady(row.ID, sum)
	}
}

// repoWriter does random backups, deletes and gcs through its own Repo.
func (s *s3Schedule) repoWriter(repo *s3chain.Repo, rng *rand.Rand, w int) {
	ctx := context.Background()
	for op := range 5 {
		switch x := rng.IntN(10); {
		case x < 5:
			path, sum := s.image(rng, fmt.Sprintf("w%d-%d.img", w, op))
			o := s3chain.BackupOptions{Chain: s.chain, Source: path, BlockSize: s3chain.MinBlockSize}
			if ms, err := repo.Backups(ctx, s.chain); err == nil && len(ms) > 0 {
				o.Parent = ms[rng.IntN(len(ms))].ID
			}
			if m, _, err := repo.Backup(ctx, o); err == nil {
				s.markReady(m.ID, sum)
			}
		case x < 8:
			ms, err := repo.Backups(ctx, s.chain)
			if err != nil || len(ms) == 0 {
				continue
			}
			id := ms[rng.IntN(len(ms))].ID
			s.mu.Lock()
			s.deleted[id] = true
			s.mu.Unlock()
			_ = repo.DeleteBackup(ctx, s.chain, id)
		default:
			_, _ = repo.GC(ctx, s3chain.GCOptions{Chain: s.chain})
		}
	}
}

// check restores every ready backup no delete touched, then drains the
// chain and checks nothing is left.
func (s *s3Schedule) check(repo *s3chain.Repo) {
	ctx := context.Background()
	for id, sum := range s.ready {
		if s.deleted[id] {
			continue
		}
		target := filepath.Join(s.dir, "check-"+id)
		if _, _, err := repo.Restore(ctx, s3chain.RestoreOptions{Chain: s.chain, BackupID: id, Destination: target}); err != nil {
			s.t.Errorf("chain %s: ready backup %s does not restore: %v", s.chain, id, err)
			continue
		}
		data, _ := os.ReadFile(target)
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
			s.t.Errorf("chain %s: ready backup %s restores other bytes", s.chain, id)
		}
	}
	ms, err := repo.Backups(ctx, s.chain)
	if err != nil {
		s.t.Fatalf("list %s: %v", s.chain, err)
	}
	for _, m := range ms {
		if err := repo.DeleteBackup(ctx, s.chain, m.ID); err != nil {
			s.t.Errorf("delete %s: %v", m.ID, err)
		}
	}
	time.Sleep(2 * s.ttl) // locks of killed processes expire
	if st, err := repo.GC(ctx, s3chain.GCOptions{}); err != nil || st.SkippedChains > 0 {
		s.t.Errorf("gc after the schedule: %+v, %v", st, err)
	}
	for _, prefix := range []string{"blocks/", "pending/", "manifests/"} {
		_ = repo.Store().List(ctx, prefix, func(oi store.ObjectInfo) error {
			if !strings.HasSuffix(oi.Key, ".state") { // kept for good: an id is never reused (FORMAT.md §7.5)
				s.t.Errorf("left behind: %s", oi.Key)
			}
			return nil
		})
	}
}
