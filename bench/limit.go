package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// limitWorkers matches the restore engine's default parallelism, so the
// limit is what the same number of streams can fetch.
const limitWorkers = s3chain.DefaultWorkers

// backupImage is what restoring one backup must move: the distinct block
// objects of its resolved volume image and the data bytes they become.
type backupImage struct {
	ID          string
	Links       int      // manifests on the path to the full backup
	Keys        []string // distinct block objects
	DataBytes   int64    // bytes of non-zero blocks written by a restore
	ObjectBytes int64    // filled in by getAll
}

// resolveImage resolves backup id of chain like a restore does (FORMAT.md
// §5): walking from the backup to its full base, the newest listing of
// each block index wins, and a shrink cuts off later indices.
func resolveImage(ctx context.Context, repo *s3chain.Repo, chain, id string) (backupImage, error) {
	img := backupImage{ID: id}
	tip, err := repo.Manifest(ctx, chain, id)
	if err != nil {
		return img, err
	}
	n := tip.NumBlocks()
	decided := make(map[int64]string, n)
	limit := n
	for m := tip; ; {
		img.Links++
		limit = min(limit, m.NumBlocks())
		for _, b := range m.Blocks {
			if _, ok := decided[b.Index]; !ok && b.Index < limit {
				decided[b.Index] = b.Digest
			}
		}
		if m.ParentID == "" {
			break
		}
		if m, err = repo.Manifest(ctx, chain, m.ParentID); err != nil {
			return img, err
		}
	}
	seen := map[string]bool{}
	for i, d := range decided {
		if d == "" {
			continue
		}
		img.DataBytes += min(tip.BlockSize, tip.SizeBytes-i*tip.BlockSize)
		if !seen[d] {
			seen[d] = true
			img.Keys = append(img.Keys, s3chain.BlockKey(chain, d))
		}
	}
	return img, nil
}

// getAll GETs every object of img from the chainvol bucket with plain
// minio-go, limitWorkers at a time, reading each body to the end.
func (s *s3) getAll(ctx context.Context, img *backupImage) (time.Duration, error) {
	start := time.Now()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(limitWorkers)
	sizes := make([]int64, len(img.Keys))
	for i, k := range img.Keys {
		g.Go(func() error {
			o, err := s.client.GetObject(ctx, chainvolBucket, k, minio.GetObjectOptions{})
			if err != nil {
				return err
			}
			defer o.Close()
			sizes[i], err = io.Copy(io.Discard, o)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return 0, fmt.Errorf("GET objects of %s: %w", img.ID, err)
	}
	d := time.Since(start)
	img.ObjectBytes = 0
	for _, n := range sizes {
		img.ObjectBytes += n
	}
	return d, nil
}

// writeSeq writes n bytes sequentially to a new file at path in 4 MiB
// writes, then fsyncs it as a restore does; the file is removed after.
func writeSeq(path string, n int64, buf []byte) (time.Duration, error) {
	start := time.Now()
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer os.Remove(path)
	for left := n; left > 0; {
		k := min(left, int64(len(buf)))
		if _, err := f.Write(buf[:k]); err != nil {
			f.Close()
			return 0, err
		}
		left -= k
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	return time.Since(start), f.Close()
}

// randomBuf is an incompressible 4 MiB write buffer.
func randomBuf() []byte {
	b := make([]byte, 4<<20)
	_, _ = rand.NewChaCha8([32]byte{7}).Read(b)
	return b
}
