package backend

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// The crash tests re-execute this test binary as a child running
// TestHelperProcess on a pool, kill it (at a step boundary through crashHook,
// or with SIGKILL at a random moment), reopen the pool and check it.
const (
	envPool    = "CHAINVOL_CRASH_POOL"    // pool dir; set only in the child
	envCrashAt = "CHAINVOL_CRASH_AT"      // exit at the n-th step boundary
	envLoop    = "CHAINVOL_CRASH_FOREVER" // "1": loop until killed
	crashExit  = 42                       // the child's exit code at a crash point
	readyLine  = "chainvol-crash-helper-ready"
)

// allSteps are the crash points the deterministic test must reach.
var allSteps = []string{
	"create:synced", "create:published", "create:ready",
	"resize:grown", "resize:recorded", "delete:marked", "delete:removed", "delete:dropped",
}

// TestHelperProcess is the child; it does nothing in a normal test run.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(envPool)
	if dir == "" {
		return // only a child of the crash tests does anything
	}
	if n, _ := strconv.Atoi(os.Getenv(envCrashAt)); n > 0 {
		seen := 0
		crashHook = func(step string) {
			if seen++; seen == n {
				fmt.Fprintln(os.Stderr, "crash at", step)
				os.Exit(crashExit)
			}
		}
	}
	p, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(readyLine)
	w := workload{t: t, p: p, prefix: strconv.Itoa(os.Getpid()) + "-"}
	// Three rounds reach the deletes; the random test loops until killed.
	for i := 0; i < 3 || os.Getenv(envLoop) == "1"; i++ {
		w.round(i)
	}
}

// workload drives a pool through create, snapshot, clone, resize and delete.
// Lvols whose content is known carry labels "sha256" and "shaBytes" (the
// sha256 of their first shaBytes bytes) for checkPool to verify.
type workload struct {
	t      *testing.T
	p      *FilePool
	prefix string
	live   []string
}

func (w *workload) round(i int) {
	ctx := context.Background()
	name := fmt.Sprintf("%s%d", w.prefix, i)
	v := mustCreate(w.t, w.p, CreateOptions{Name: name, Kind: KindVolume, SizeBytes: int64(64+i%4*64) << 10})
	vPath, _ := w.p.DataPath(v.ID)
	writeRandom(w.t, vPath, 4096, 20000)
	v, err := w.p.SetLabels(ctx, v.ID, shaLabels(w.t, vPath))
	if err != nil {
		w.t.Fatal(err)
	}
	s := mustCreate(w.t, w.p, CreateOptions{Name: name, Kind: KindSnapshot, SourceID: v.ID, Labels: v.Labels})
	c := mustCreate(w.t, w.p, CreateOptions{Name: name + "-c", Kind: KindVolume, SourceID: s.ID,
		SizeBytes: s.SizeBytes + 8192, Labels: s.Labels})
	if _, err := w.p.Resize(ctx, v.ID, v.SizeBytes+4096); err != nil {
		w.t.Fatal(err)
	}
	w.live = append(w.live, v.ID, s.ID, c.ID)
	for len(w.live) > 6 {
		if err := w.p.Delete(ctx, w.live[0]); err != nil {
			w.t.Fatal(err)
		}
		w.live = w.live[1:]
	}
}

func shaLabels(t testing.TB, path string) map[string]string {
	n := fileSize(t, path)
	return map[string]string{"sha256": fileSHA(t, path, n), "shaBytes": strconv.FormatInt(n, 10)}
}

// startChild starts the helper on dir with extra environment.
func startChild(t *testing.T, dir string, env ...string) (*exec.Cmd, *bufio.Reader, *strings.Builder) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), append(env, envPool+"="+dir)...)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewReader(out), stderr
}

// TestCrashAtEachStep crashes a child right after step n of a fixed
// workload, for n = 1, 2, ... until the workload completes, checking the
// recovered pool each time, so every step boundary is covered.
func TestCrashAtEachStep(t *testing.T) {
	seen := map[string]bool{}
	for n := 1; ; n++ {
		dir := t.TempDir()
		cmd, out, stderr := startChild(t, dir, fmt.Sprintf("%s=%d", envCrashAt, n))
		_, _ = out.ReadString(0) // drain until exit
		err := cmd.Wait()
		if err == nil {
			if n < len(allSteps) {
				t.Fatalf("workload finished after only %d steps", n-1)
			}
			break
		}
		if cmd.ProcessState.ExitCode() != crashExit {
			t.Fatalf("child (crash at %d): %v\n%s", n, err, stderr)
		}
		for _, l := range strings.Split(stderr.String(), "\n") {
			if step, ok := strings.CutPrefix(l, "crash at "); ok {
				seen[step] = true
			}
		}
		checkPool(t, dir)
	}
	for _, s := range allSteps {
		if !seen[s] {
			t.Errorf("no crash at step %s", s)
		}
	}
}

// TestCrashRandom SIGKILLs a child looping over the workload at random
// moments, reusing the pool across kills, and checks it after each.
func TestCrashRandom(t *testing.T) {
	dir := t.TempDir()
	lvols := 0
	for i := range 12 {
		cmd, out, stderr := startChild(t, dir, envLoop+"=1")
		if l, err := out.ReadString('\n'); err != nil || strings.TrimSpace(l) != readyLine {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child %d did not start: %q %v\n%s", i, l, err, stderr)
		}
		time.Sleep(time.Duration(rand.IntN(80_000)) * time.Microsecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); cmd.ProcessState.ExitCode() != -1 {
			t.Fatalf("child %d ended before the kill: %v\n%s", i, err, stderr)
		}
		lvols += checkPool(t, dir)
	}
	t.Logf("pools held %d lvols in all after the kills", lvols)
}

// checkPool reopens the pool in dir (running recovery) and checks the crash
// invariants: every record is ready; every lvol has a data file of its
// recorded size and, if labelled, the recorded content; the name indexes
// match the records; no file in lvols/ or tmp/ lacks a record.
// It returns the number of lvols.
func checkPool(t *testing.T, dir string) int {
	t.Helper()
	p, err := Open(dir)
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer p.Close()
	recs, err := p.meta.all()
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, r := range recs {
		if r.State != stateReady {
			t.Fatalf("record %s left %s", r.ID, r.State)
		}
		files = append(files, r.ID+".img")
		path := p.dataPath(r.ID)
		if got := fileSize(t, path); got != r.SizeBytes {
			t.Fatalf("lvol %s: file %d bytes, record %d", r.ID, got, r.SizeBytes)
		}
		if sha := r.Labels["sha256"]; sha != "" {
			n, _ := strconv.ParseInt(r.Labels["shaBytes"], 10, 64)
			if got := fileSHA(t, path, n); got != sha {
				t.Fatalf("lvol %s (%s %s): content sha256 %s, want %s", r.ID, r.Kind, r.Name, got, sha)
			}
		}
		if byName, err := p.GetByName(context.Background(), r.Kind, r.Name); err != nil || byName.ID != r.ID {
			t.Fatalf("name index of %s: %+v, %v", r.ID, byName, err)
		}
	}
	checkNameIndexes(t, p, len(recs))
	if got := dirNames(t, filepath.Join(dir, "lvols")); !slices.Equal(got, files) {
		t.Fatalf("lvols/ holds %v, records %v", got, files)
	}
	if got := dirNames(t, filepath.Join(dir, "tmp")); len(got) != 0 {
		t.Fatalf("tmp/ holds %v", got)
	}
	return len(recs)
}

// checkNameIndexes checks that the name indexes hold exactly n entries (one
// per record, since checkPool found each record through its name).
func checkNameIndexes(t *testing.T, p *FilePool, n int) {
	t.Helper()
	entries := 0
	err := p.meta.db.View(func(tx *bbolt.Tx) error {
		for _, k := range []Kind{KindVolume, KindSnapshot} {
			entries += tx.Bucket(nameBucket(k)).Stats().KeyN
		}
		return nil
	})
	if err != nil || entries != n {
		t.Fatalf("name indexes hold %d entries for %d records (%v)", entries, n, err)
	}
}
