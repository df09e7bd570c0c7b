package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// restic runs bin/restic (make bench-deps builds it from its Go module at
// RESTIC_VERSION, the newest release) against its own bucket of the same
// versitygw.
type restic struct {
	bin     string
	env     []string
	version string
}

// newRestic initialises a repository (format 2, so it compresses like
// chainvol does) in the restic bucket, with a fresh cache under tmp.
func newRestic(e *env, s *s3) (*restic, error) {
	r := &restic{bin: e.bin("restic"), env: append(os.Environ(),
		"RESTIC_REPOSITORY=s3:http://"+s.endpoint+"/"+resticBucket,
		"AWS_ACCESS_KEY_ID="+s.access, "AWS_SECRET_ACCESS_KEY="+s.secret, "AWS_DEFAULT_REGION=us-east-1",
		"RESTIC_PASSWORD=chainvol-bench", "RESTIC_CACHE_DIR="+filepath.Join(e.tmp, "restic-cache"))}
	out, err := r.cmd("version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s version: %w (build it: make bench-deps)", r.bin, err)
	}
	r.version = strings.TrimSpace(string(out))
	if out, err := r.cmd("init", "--repository-version", "2").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("restic init: %w: %s", err, out)
	}
	return r, nil
}

func (r *restic) cmd(args ...string) *exec.Cmd {
	c := exec.Command(r.bin, args...)
	c.Env = r.env
	return c
}

// resticSummary is the last JSON line of `restic backup --json`.
type resticSummary struct {
	SnapshotID          string `json:"snapshot_id"`
	DataAdded           int64  `json:"data_added"`
	TotalBytesProcessed int64  `json:"total_bytes_processed"`
}

// backup stores the volume image as vol.img read from stdin (the image's
// lvol file changes name with each snapshot; stdin keeps one name).
func (r *restic) backup(image string) (resticSummary, childRun, error) {
	var sum resticSummary
	f, err := os.Open(image)
	if err != nil {
		return sum, childRun{}, err
	}
	defer f.Close()
	c := r.cmd("backup", "--json", "--quiet", "--host", "bench", "--stdin", "--stdin-filename", "vol.img")
	c.Stdin = f
	out, cr, err := runChild(c)
	if err != nil {
		return sum, cr, fmt.Errorf("restic backup: %w", err)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["message_type"] == "summary" {
			_ = json.Unmarshal(sc.Bytes(), &sum)
		}
	}
	if sum.SnapshotID == "" {
		return sum, cr, fmt.Errorf("restic backup printed no summary: %s", out)
	}
	return sum, cr, nil
}

// restore restores snapshot id into dir (which then holds vol.img).
func (r *restic) restore(id, dir string) (childRun, error) {
	_, cr, err := runChild(r.cmd("restore", id, "--target", dir))
	if err != nil {
		return cr, fmt.Errorf("restic restore: %w", err)
	}
	return cr, nil
}

// childRun is the wall time, CPU time (user+system) and peak RSS of one
// child process.
type childRun struct {
	Wall, CPU time.Duration
	PeakRSS   int64 // bytes, from ru_maxrss
}

// runChild runs c to completion and reports its wall time and ru_maxrss.
func runChild(c *exec.Cmd) (string, childRun, error) {
	var stdout, stderr strings.Builder
	c.Stdout, c.Stderr = &stdout, &stderr
	start := time.Now()
	err := c.Run()
	cr := childRun{Wall: time.Since(start)}
	if c.ProcessState != nil {
		cr.PeakRSS = maxRSS(c.ProcessState)
		cr.CPU = c.ProcessState.UserTime() + c.ProcessState.SystemTime()
	}
	if err != nil {
		return stdout.String(), cr, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), cr, nil
}
