package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCapture runs execute with args and returns its exit code and what it
// wrote to stderr.
func runCapture(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	code := execute(context.Background(), args)
	os.Stderr = old
	w.Close()
	return code, string(<-done)
}

// TestExitCodesAndJSON: a missing backup exits 3 and a wrong encryption key
// exits 4 (distinct from 1, any other failure, and 2, usage), as the
// root help documents; with -o json the error is one JSON object on stderr
// and backup progress is a stream of JSON lines (issue 17).
func TestExitCodesAndJSON(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "disk.img")
	if err := os.WriteFile(img, bytes.Repeat([]byte("chainvol"), 1<<17), 0o600); err != nil {
		t.Fatal(err)
	}
	g := []string{"--state-dir", filepath.Join(dir, "state")}
	key := []string{"CHAINVOL_ENCRYPTION_KEY=" + strings.Repeat("ab", 32)}
	if err := os.MkdirAll(filepath.Join(dir, "state", "backups"), 0o700); err != nil {
		t.Fatal(err)
	}
	code, stderr := runCapture(t, key, append(g, "-o", "json", "backup", "create", "--from", img, "--chain", "lab/disk",
		"--id", "b1", "--progress-interval", "10ms")...)
	if code != 0 {
		t.Fatalf("backup create: exit %d; stderr %s", code, stderr)
	}
	var final bool
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var p jsonProgressLine
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("progress line %q is not JSON: %v", l, err)
		}
		final = final || (p.Progress.Final && p.Progress.DoneBytes == p.Progress.TotalBytes && p.Progress.TotalBytes == 1<<20)
	}
	if !final {
		t.Errorf("no final progress line with 1 MiB done; stderr %s", stderr)
	}

	code, stderr = runCapture(t, key, append(g, "-o", "json", "backup", "show", "lab/disk@nope")...)
	var je jsonError
	if err := json.Unmarshal([]byte(stderr), &je); err != nil || code != exitNotFound || je.ExitCode != exitNotFound ||
		je.Reason != "notFound" || je.Hint == "" || strings.Contains(je.Error, "hint:") {
		t.Errorf("missing backup: exit %d, stderr %q (%v)", code, stderr, err)
	}
	wrong := []string{"CHAINVOL_ENCRYPTION_KEY=" + strings.Repeat("cd", 32)}
	if code, stderr = runCapture(t, wrong, append(g, "backup", "verify", "lab/disk@b1")...); code != exitWrongKey {
		t.Errorf("wrong key: exit %d, want %d; stderr %q", code, exitWrongKey, stderr)
	}
	if code, _ = runCapture(t, key, append(g, "backup", "verify", "lab/disk@b1")...); code != 0 {
		t.Errorf("verify with the right key: exit %d", code)
	}
	if code, stderr = runCapture(t, nil, "-o", "json", "--no-such-flag"); code != exitUsage || !strings.Contains(stderr, `"reason":"usage"`) {
		t.Errorf("usage error: exit %d, stderr %q", code, stderr)
	}
}
