package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"
	"unsafe"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// limitWorkers matches the restore engine's default parallelism, so the
// limit is what the same number of streams can fetch.
const limitWorkers = s3chain.DefaultWorkers

// backupImage is what restoring one backup must move: the distinct block
// objects of its resolved volume image, the offsets each fills and the
// data bytes they become.
type backupImage struct {
	ID          string
	Links       int // manifests on the path to the full backup
	BlockSize   int64
	SizeBytes   int64
	Objects     []imageObject // distinct block objects, in order of first use
	DataBytes   int64         // bytes of non-zero blocks written by a restore
	ObjectBytes int64         // filled in by getAll
}

// imageObject is one block object and the byte offsets of the blocks it
// fills in the image.
type imageObject struct {
	Key     string
	Offsets []int64
}

// resolveImage returns what restoring backup id of chain moves: its
// image's distinct block objects and data bytes. A version-2 manifest
// (and a full backup) lists the whole image (FORMAT.md §5); an older
// incremental is resolved like a restore does, the newest listing of each
// block index winning and a shrink cutting off later indices. Links is
// the backup's position in its chain (1 for a full backup), counted along
// the parent ids as far as their manifests exist.
func resolveImage(ctx context.Context, repo *s3chain.Repo, chain, id string) (backupImage, error) {
	img := backupImage{ID: id}
	tip, err := repo.Manifest(ctx, chain, id)
	if err != nil {
		return img, err
	}
	n := tip.NumBlocks()
	decided := make(map[int64]string, n)
	limit := n
	resolved := false
	for m := tip; m != nil; {
		img.Links++
		if !resolved {
			limit = min(limit, m.NumBlocks())
			for _, b := range m.Blocks {
				if _, ok := decided[b.Index]; !ok && b.Index < limit {
					decided[b.Index] = b.Digest
				}
			}
			resolved = m.SelfContained()
		}
		if m.ParentID == "" {
			break
		}
		p, err := repo.Manifest(ctx, chain, m.ParentID)
		if err != nil && !resolved {
			return img, err
		}
		m = p
		if err != nil {
			break
		}
	}
	img.BlockSize, img.SizeBytes = tip.BlockSize, tip.SizeBytes
	byDigest := map[string]int{}
	for i := range n {
		d, ok := decided[i]
		if !ok || d == "" {
			continue
		}
		img.DataBytes += min(tip.BlockSize, tip.SizeBytes-i*tip.BlockSize)
		k, ok := byDigest[d]
		if !ok {
			k = len(img.Objects)
			byDigest[d] = k
			img.Objects = append(img.Objects, imageObject{Key: s3chain.BlockKey(chain, d)})
		}
		img.Objects[k].Offsets = append(img.Objects[k].Offsets, i*tip.BlockSize)
	}
	return img, nil
}

// getAll GETs every object of img from the chainvol bucket with plain
// minio-go, limitWorkers at a time, reading each body to the end.
func (s *s3) getAll(ctx context.Context, img *backupImage) (time.Duration, error) {
	start := time.Now()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(limitWorkers)
	sizes := make([]int64, len(img.Objects))
	for i, obj := range img.Objects {
		g.Go(func() error {
			o, err := s.client.GetObject(ctx, chainvolBucket, obj.Key, minio.GetObjectOptions{})
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
// With direct the file is opened O_DIRECT (buf must be 4096-aligned, as
// randomBuf's is), as the restore engine writes.
func writeSeq(path string, n int64, buf []byte, direct bool) (time.Duration, error) {
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if direct {
		flags |= unix.O_DIRECT
	}
	start := time.Now()
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return 0, err
	}
	defer os.Remove(path)
	for left := n; left > 0; {
		k := min(left, int64(len(buf)))
		if direct {
			k = (k + 4095) &^ 4095 // O_DIRECT lengths are whole 4 KiB
		}
		if _, err := f.Write(buf[:k]); err != nil {
			f.Close()
			return 0, err
		}
		left -= min(left, k)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	return time.Since(start), f.Close()
}

// randomBuf is an incompressible 4 MiB write buffer, 4096-aligned for O_DIRECT.
func randomBuf() []byte {
	b := alignedBuf(4 << 20)
	_, _ = rand.NewChaCha8([32]byte{7}).Read(b)
	return b
}

// alignedBuf is n bytes starting on a 4096-byte boundary, as O_DIRECT needs.
func alignedBuf(n int) []byte {
	b := make([]byte, n+4096)
	off := (4096 - int(uintptr(unsafe.Pointer(&b[0]))%4096)) % 4096
	return b[off : off+n : off+n]
}
