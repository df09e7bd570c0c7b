package s3chain

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// DetectFSType returns the filesystem type found on the file or block
// device at path, as blkid(8) probes it ("xfs", "ext4", ...), or "" when it
// finds none (blkid exits 2). The superblock is probed directly (-p), not
// read from blkid's cache, because the snapshot is new. Errors: blkid
// missing or failing otherwise.
func DetectFSType(ctx context.Context, path string) (string, error) {
	out, err := exec.CommandContext(ctx, "blkid", "-p", "-o", "value", "-s", "TYPE", path).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 2 {
		return "", nil
	}
	if err != nil {
		stderr := ""
		if ee != nil {
			stderr = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("blkid -p %s: %w: %s", path, err, stderr)
	}
	return strings.TrimSpace(string(out)), nil
}
