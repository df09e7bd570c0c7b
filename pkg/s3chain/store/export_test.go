package store

import (
	"os"
	"path/filepath"

	"github.com/chainvol/chainvol/internal/durable"
)

// CreateTempForTest creates the temporary file a write of path goes
// through (durable.TempPattern), for tests that leave it behind as a
// killed writer would.
func CreateTempForTest(path string) (*os.File, error) {
	return os.CreateTemp(filepath.Dir(path), durable.TempPattern(filepath.Base(path)))
}
