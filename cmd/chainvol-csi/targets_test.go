package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMalformedTargetRefusedAtStart: chainvol-csi given a malformed
// -backup-target exits at start, non-zero, with a message naming the value
// (the spec, or the target's name and the faulty part: a URL may hold a
// misplaced secret, so it is not repeated whole) and what is wrong, instead of serving and failing the first backup (issue
// 33: the chart rendered -backup-target==s3://b/p and every node's pod
// crash-looped without saying why at install time). No secret is echoed.
func TestMalformedTargetRefusedAtStart(t *testing.T) {
	bin := buildBoth(t)
	for _, c := range []struct{ arg, want string }{
		{"=s3://b/p", `backup target "=s3://b/p" must be NAME=URL`},
		{"S3=s3://bucket/p", `backup target "S3=s3://bucket/p" must be NAME=URL`},
		{"s3=s3://Bad_Bucket/p", `backup target "s3": invalid backup target: bucket "Bad_Bucket"`},
		{"s3=https://bucket.example/p", `backup target "s3": invalid backup target: unknown scheme "https"`},
		{"s3=s3://bucket/p?endpoint=http://minio:9000", `backup target "s3": invalid backup target: endpoint "http://minio:9000"`},
		{"s3=s3://bucket/p?secret=hunter2", `backup target "s3": invalid backup target: unknown parameter "secret"`},
		{"local=file://relative/dir", `backup target "local": invalid backup target: file URL has host "relative"`},
		{"s3=s3://AKIA:hunter2@bucket/p", `backup target "s3": invalid backup target: credentials do not belong in the URL`},
	} {
		dir := t.TempDir()
		for _, d := range []string{"pool", "state"} {
			if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ctx, filepath.Join(bin, "chainvol-csi"), "-node-id", "n1",
			"-endpoint", "unix://"+filepath.Join(dir, "csi.sock"), "-pool-dir", filepath.Join(dir, "pool"),
			"-state-dir", filepath.Join(dir, "state"), "-metrics-address", "", "-backup-target", c.arg).CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || timedOut {
			t.Errorf("-backup-target %s: %v (want exit status 1 at start)\n%s", c.arg, err, out)
			continue
		}
		// klog quotes err="..." and escapes the quotes inside.
		if msg := strings.ReplaceAll(string(out), `\"`, `"`); !strings.Contains(msg, c.want) || strings.Contains(msg, "hunter2") {
			t.Errorf("-backup-target %s: the start error lacks %q or echoes a secret:\n%s", c.arg, c.want, msg)
		}
		if _, err := os.Stat(filepath.Join(dir, "csi.sock")); err == nil {
			t.Errorf("-backup-target %s: the socket was created before the refusal", c.arg)
		}
	}
}
