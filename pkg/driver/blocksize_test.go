package driver

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestParseBlockSize: quantities within FORMAT.md's bounds and 4 KiB
// aligned are bytes; anything else is InvalidArgument, also a blockSize
// without backup (it sets a chain's block size, and only a backup has one).
func TestParseBlockSize(t *testing.T) {
	for v, want := range map[string]int64{"1Mi": 1 << 20, "4Mi": 4 << 20, "65536": 64 << 10, "64Mi": 64 << 20} {
		if got, err := parseBlockSize(v); err != nil || got != want {
			t.Errorf("parseBlockSize(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
	for _, v := range []string{"", "1M", "32Ki", "128Mi", "1Mi+1", "100000", "-1Mi", "lots"} {
		if _, err := parseBlockSize(v); status.Code(err) != codes.InvalidArgument {
			t.Errorf("parseBlockSize(%q): %v, want InvalidArgument", v, err)
		}
	}
	p, err := parseSnapshotParams(map[string]string{ParamBackup: "true", ParamBlockSize: "1Mi"})
	if err != nil || p.BlockSize != 1<<20 {
		t.Errorf("backup with blockSize 1Mi: %+v, %v", p, err)
	}
	if _, err := parseSnapshotParams(map[string]string{ParamBlockSize: "1Mi"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("blockSize without backup: %v, want InvalidArgument", err)
	}
}
