package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGCTempFiles: gc of the default file target reports, and deletes,
// the temporary file a writer killed mid-write left there (issue 24); a
// dry run only counts it.
func TestGCTempFiles(t *testing.T) {
	state := t.TempDir()
	blocks := filepath.Join(state, "backups", "blocks", "lab", "ab")
	if err := os.MkdirAll(blocks, 0o755); err != nil {
		t.Fatal(err)
	}
	temp := filepath.Join(blocks, "ab12~tmp123456")
	if err := os.WriteFile(temp, make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(temp, old, old); err != nil {
		t.Fatal(err)
	}
	c := &ctl{t: t}
	g := []string{"--state-dir", state}
	dry := decode[struct {
		TempFiles int   `json:"tempFiles"`
		TempBytes int64 `json:"tempBytes"`
	}](t, c.ok(append(g, "gc", "--dry-run", "-o", "json")...))
	if dry.TempFiles != 1 || dry.TempBytes != 2048 {
		t.Fatalf("gc --dry-run -o json: %+v; want 1 temporary file of 2048 bytes", dry)
	}
	if _, err := os.Stat(temp); err != nil {
		t.Fatalf("a dry run deleted the temporary file: %v", err)
	}
	if out := c.ok(append(g, "gc")...); !strings.Contains(out, "deleted 1 temporary files of killed writers") {
		t.Errorf("gc output does not report the temporary file: %q", out)
	}
	if _, err := os.Stat(temp); !os.IsNotExist(err) {
		t.Fatalf("gc left the temporary file: %v", err)
	}
}
