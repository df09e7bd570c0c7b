package testutil

import (
	"os"
	"testing"
)

// InCI reports whether the tests run under CI (CI=true), where a skipped
// privileged or S3 test is a failure rather than a skip.
func InCI() bool { return os.Getenv("CI") == "true" }

// SkipOrFail skips the test outside CI and fails it under CI=true, with reason.
func SkipOrFail(t testing.TB, reason string) {
	t.Helper()
	if InCI() {
		t.Fatalf("required under CI=true: %s", reason)
	}
	t.Skip(reason)
}

// RequireRoot skips (outside CI) or fails (under CI) a test that needs root:
// loop devices, mkfs and mount.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipOrFail(t, "test needs root (loop devices, mkfs, mount)")
	}
}

// RequireFUSE skips (outside CI) or fails (under CI) a test that mounts a
// FUSE filesystem: it needs root (RequireRoot) and /dev/fuse.
func RequireFUSE(t testing.TB) {
	t.Helper()
	RequireRoot(t)
	if _, err := os.Stat("/dev/fuse"); err != nil {
		SkipOrFail(t, "test needs /dev/fuse: "+err.Error())
	}
}
