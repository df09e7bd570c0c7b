package s3chain_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

func TestDetectFSType(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "fs.img")
	blank := filepath.Join(dir, "blank.img")
	for _, p := range []string{img, blank} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, 32<<20); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Run(t, "mkfs.ext4", "-q", "-F", img)
	for path, want := range map[string]string{img: "ext4", blank: ""} {
		got, err := s3chain.DetectFSType(context.Background(), path)
		if err != nil || got != want {
			t.Errorf("DetectFSType(%s) = %q, %v; want %q", filepath.Base(path), got, err, want)
		}
	}
}
