package durable

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
)

// BenchmarkWriteFile measures a 4 KiB durable write on a real XFS against
// the same write without the directory's fsync (the routine checkpoints
// and image records used before): the price of not losing the rename.
func BenchmarkWriteFile(b *testing.B) {
	mnt := testutil.LoopFS(b, "xfs", crashFSSizeBytes)
	data := bytes.Repeat([]byte("x"), 4096)
	for _, o := range []op{{name: "durable", run: func(_, p string, d []byte) error { return WriteFile(p, d, 0o600) }}, noDirSync} {
		b.Run(o.name, func(b *testing.B) {
			p := filepath.Join(mnt, o.name)
			for b.Loop() {
				if err := o.run(mnt, p, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
