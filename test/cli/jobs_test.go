package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/driver"
)

// jobOut is one row of "jobs -o json".
type jobOut struct {
	Kind, Backup, Subject, Process, State string
	PID                                   int
	DoneBytes, TotalBytes                 int64
	BytesPerSecond, Percent               float64
	ETASeconds                            *float64
	Stale                                 bool
}

// waitJob polls "jobs -o json" in stateDir until a job of kind shows
// progress and a rate, and returns it.
func waitJob(t *testing.T, c *ctl, stateDir, kind string) jobOut {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		last = c.ok("--state-dir", stateDir, "jobs", "-o", "json")
		for _, j := range decode[[]jobOut](t, last) {
			if j.Kind == kind && j.DoneBytes > 0 && j.BytesPerSecond > 0 {
				return j
			}
		}
	}
	t.Fatalf("no %s job with progress in 30 s; last jobs:\n%s", kind, last)
	return jobOut{}
}

// checkRunning asserts what every running job's row must say.
func checkRunning(t *testing.T, j jobOut, backupPrefix string) {
	t.Helper()
	if j.State != "running" || j.Stale || j.TotalBytes <= 0 || j.DoneBytes >= j.TotalBytes ||
		j.Percent <= 0 || j.Percent >= 100 || j.ETASeconds == nil || *j.ETASeconds <= 0 ||
		!strings.HasPrefix(j.Backup, backupPrefix) || j.PID <= 0 {
		t.Fatalf("running job = %+v (ETA %v), want progress under way, a rate, an ETA and backup %s...", j, j.ETASeconds, backupPrefix)
	}
}

// TestJobsShowsCLIRestore: a restore by chainvolctl, slowed by the proxy,
// is listed by "jobs" with progress, rate and ETA (JSON and table); it is
// gone once interrupted; a slowed backup create is listed too; a restore
// killed with SIGKILL is shown stale.
func TestJobsShowsCLIRestore(t *testing.T) {
	e := newRestoreEnv(t)
	state := e.g[1]
	// A CLI job is published only into a state directory that exists (a
	// node's); chainvolctl never creates one for it.
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	e.proxy.delay.Store(int64(300 * time.Millisecond))
	defer e.proxy.delay.Store(0)
	start := func(to string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(binary, e.args("restore", "s3:lab/x@latest", "--to", to, "--workers", "1")...)
		cmd.Env = append(os.Environ(), e.c.env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &stderr
	}
	to := filepath.Join(e.dir, "out.img")
	cmd, stderr := start(to)
	j := waitJob(t, e.c, state, "restore")
	checkRunning(t, j, "s3:lab/x@")
	if j.Subject != to || j.PID != cmd.Process.Pid || j.Process != "chainvolctl" || j.TotalBytes != imageSize {
		t.Fatalf("restore job = %+v, want subject %s, pid %d, chainvolctl, %d bytes", j, to, cmd.Process.Pid, imageSize)
	}
	table := e.c.ok("--state-dir", state, "jobs")
	t.Logf("jobs:\n%s", table)
	if !strings.Contains(table, "restore") || !strings.Contains(table, "s3:lab/x@") || !strings.Contains(table, "/s") ||
		!strings.Contains(table, fmt.Sprintf("chainvolctl/%d", cmd.Process.Pid)) {
		t.Fatalf("jobs table:\n%s", table)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	if out := e.c.ok("--state-dir", state, "jobs", "-o", "json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("jobs after the restore ended: %s (restore: %s)", out, stderr)
	}
	if out := e.c.ok("--state-dir", state, "jobs"); !strings.Contains(out, "no backups, restores or gcs running") {
		t.Fatalf("jobs with none running: %s", out)
	}

	// A backup: block uploads slowed.
	rnd := filepath.Join(e.dir, "random.img")
	writeRandom(t, rnd, 0, 16<<20)
	e.proxy.putDelay.Store(int64(300 * time.Millisecond))
	bk := exec.Command(binary, e.args("backup", "create", "--from", rnd, "--chain", "s3:lab/rnd", "--block-size", "1048576", "--workers", "2")...)
	bk.Env = append(os.Environ(), e.c.env...)
	if err := bk.Start(); err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, e.c, state, "backup")
	if j.Backup != "s3:lab/rnd" || j.Subject != rnd || j.PID != bk.Process.Pid || j.TotalBytes != 16<<20 || j.State != "running" {
		t.Fatalf("backup job = %+v, want s3:lab/rnd from %s by pid %d", j, rnd, bk.Process.Pid)
	}
	e.proxy.putDelay.Store(0)
	if err := bk.Wait(); err != nil {
		t.Fatalf("backup create: %v", err)
	}
	waitNoJobs(t, e.c, state)

	cmd, _ = start(filepath.Join(e.dir, "killed.img"))
	waitJob(t, e.c, state, "restore")
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	jobs := decode[[]jobOut](t, e.c.ok("--state-dir", state, "jobs", "-o", "json"))
	if len(jobs) != 1 || !jobs[0].Stale || jobs[0].State != "stale" || jobs[0].ETASeconds != nil {
		t.Fatalf("jobs after SIGKILL = %+v, want one stale restore", jobs)
	}
	if out := e.c.ok("--state-dir", state, "jobs"); !strings.Contains(out, "stale: process") {
		t.Fatalf("jobs table of a stale record:\n%s", out)
	}
}

// slowDriver is a driver whose default target is the S3 server of a
// restoreEnv, reached through its slow proxy, with the keys in a
// credentials file; gc adjusts the options (background gc).
func slowDriver(t *testing.T, e *restoreEnv, opts func(*driver.Options)) *csitest.Node {
	t.Helper()
	var target, key, secret string
	for _, kv := range e.c.env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "CHAINVOL_TARGETS":
			target = v
		case "CHAINVOL_ACCESS_KEY_ID":
			key = v
		case "CHAINVOL_SECRET_ACCESS_KEY":
			secret = v
		}
	}
	creds := filepath.Join(e.dir, "s3.env")
	if err := os.WriteFile(creds, []byte("accessKeyID="+key+"\nsecretAccessKey="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := testutil.LoopFS(t, "xfs", 1<<30)
	return csitest.Start(t, "jobs-node", pool, func(o *driver.Options) {
		o.BackupTargets, o.BackupCredentialsFile = []string{target}, creds
		if opts != nil {
			opts(o)
		}
	})
}

// waitNoJobs polls "jobs" in stateDir until it lists none.
func waitNoJobs(t *testing.T, c *ctl, stateDir string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out := c.ok("--state-dir", stateDir, "jobs", "-o", "json")
		if strings.TrimSpace(out) == "[]" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs after the job ended: %s", out)
		}
	}
}

// TestJobsShowsDriverRestore: the driver's restore of a new volume from a
// slow S3 target is listed by "jobs" over the driver's state directory,
// and gone when the restore is done.
func TestJobsShowsDriverRestore(t *testing.T) {
	e := newRestoreEnv(t) // a backup s3:lab/x on versitygw, behind the slow proxy
	n := slowDriver(t, e, nil)
	c := &ctl{t: t}
	csi := func(args ...string) []string { return append([]string{"csi", "--endpoint", n.Endpoint}, args...) }
	// Random blocks, none zero: 64 GETs of 0.5 s, 8 at a time.
	rnd := filepath.Join(e.dir, "random.img")
	writeRandom(t, rnd, 0, imageSize)
	e.c.ok(e.args("backup", "create", "--from", rnd, "--chain", "s3:lab/rnd", "--block-size", "1048576")...)
	e.proxy.delay.Store(int64(500 * time.Millisecond))
	// The call answers Aborted (in progress) after 1 s; the restore goes on.
	c.run(append([]string{"csi", "--endpoint", n.Endpoint, "--timeout", "2s"}, "volume", "create", "restored", "--size", "64Mi", "--block",
		"--param", "fromBackup=s3:lab/rnd@latest")...)
	j := waitJob(t, c, n.Opts.StateDir, "restore")
	checkRunning(t, j, "s3:lab/rnd@")
	if j.PID != os.Getpid() || j.Subject == "" {
		t.Fatalf("driver restore job = %+v, want this process (%d) and the lvol as subject", j, os.Getpid())
	}
	e.proxy.delay.Store(0)
	c.ok(csi("volume", "create", "restored", "--size", "64Mi", "--block", "--param", "fromBackup=s3:lab/rnd@latest", "--wait", "-q")...)
	waitNoJobs(t, c, n.Opts.StateDir)
}

// TestJobsShowsDriverGC: the background gc after a backup snapshot's
// deletion, its block deletes slowed, is listed by "jobs" as a gc of the
// chain, and gone when it is done.
func TestJobsShowsDriverGC(t *testing.T) {
	e := newRestoreEnv(t)
	n := slowDriver(t, e, func(o *driver.Options) { o.GCDelay, o.GCMinAge = 100*time.Millisecond, 0 })
	c := &ctl{t: t}
	csi := func(args ...string) []string { return append([]string{"csi", "--endpoint", n.Endpoint}, args...) }
	vol := strings.TrimSpace(c.ok(csi("volume", "create", "src", "--size", "16Mi", "--block", "-q")...))
	pub, release := publishBlock(t, c, csi, vol, filepath.Join(e.dir, "src"))
	writeSynced(t, pub, 16<<20)
	release()
	snap := strings.TrimSpace(c.ok(csi("snapshot", "create", "bk", "--source", vol, "--param", "backup=true", "--wait", "-q")...))
	e.proxy.delDelay.Store(int64(300 * time.Millisecond))
	defer e.proxy.delDelay.Store(0)
	c.ok(csi("snapshot", "delete", snap)...)
	var last string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		last = c.ok("--state-dir", n.Opts.StateDir, "jobs", "-o", "json")
		if js := decode[[]jobOut](t, last); len(js) == 1 && js[0].Kind == "gc" {
			if j := js[0]; j.State != "running" || !strings.HasPrefix(j.Backup, "s3:") || j.TotalBytes != 0 || j.ETASeconds != nil {
				t.Fatalf("gc job = %+v, want a running gc of an s3 chain without sizes", j)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no gc job in 20 s; last jobs: %s", last)
		}
	}
	if out := c.ok("--state-dir", n.Opts.StateDir, "jobs"); !strings.Contains(out, "gc ") {
		t.Fatalf("jobs table of a gc:\n%s", out)
	}
	waitNoJobs(t, c, n.Opts.StateDir)
}
