package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// The null restore and the null backup are the limits a restore and a
// backup are held against (issue 29): the engine's pipeline on the same
// machine, with the same requests and concurrency, less everything the
// engine adds for integrity and size (digests, zstd, existence checks,
// manifests). On 2 shared cores a GET-only and a write-only run each get
// the whole machine; these have to do both at once, as a restore does.

// nullRestore GETs every object of img, limitWorkers at a time as the
// engine does (minio-go Core, the engine's call), reads each body into an
// aligned buffer as it arrives and writes O_DIRECT, at every offset of the
// blocks it fills in a new file of the image's size at path, each block's
// full length (the body, then whatever the buffer held after it), then
// fsyncs; no digest, no decoding. The file is removed after. It writes the
// bytes a restore writes: with the body's length only (as before session 8
// of issue 29), a compressed image wrote 63% of them, too kind a limit on
// storage slower than the wire.
func (s *s3) nullRestore(ctx context.Context, img *backupImage, path string) (time.Duration, error) {
	start := time.Now()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_DIRECT, 0o600)
	if err != nil {
		return 0, err
	}
	defer os.Remove(path)
	defer f.Close()
	if err := f.Truncate(img.SizeBytes); err != nil {
		return 0, err
	}
	bufLen := int(img.BlockSize+64+4095) &^ 4095 // the engine's largest object, whole 4 KiB
	bufs := make(chan []byte, limitWorkers)
	for range limitWorkers {
		bufs <- alignedBuf(bufLen)
	}
	core := minio.Core{Client: s.client}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(limitWorkers)
	for _, o := range img.Objects {
		g.Go(func() error {
			buf := <-bufs
			defer func() { bufs <- buf }()
			body, info, _, err := core.GetObject(ctx, chainvolBucket, o.Key, minio.GetObjectOptions{})
			if err != nil {
				return fmt.Errorf("GET %s: %w", o.Key, err)
			}
			defer body.Close()
			if info.Size < 0 || info.Size > int64(len(buf)) {
				return fmt.Errorf("GET %s: %d bytes, more than a block object", o.Key, info.Size)
			}
			if _, err := io.ReadFull(body, buf[:info.Size]); err != nil {
				return fmt.Errorf("GET %s: %w", o.Key, err)
			}
			for _, off := range o.Offsets {
				n := (min(img.BlockSize, img.SizeBytes-off) + 4095) &^ 4095 // O_DIRECT writes whole 4 KiB
				if _, err := f.WriteAt(buf[:n], off); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, fmt.Errorf("null restore of %s: %w", img.ID, err)
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// nullBackup reads every data block of img (offsets from its manifest)
// from the snapshot image file and PUTs it as it is, limitWorkers at a
// time (the engine's default), with the engine's PutObject call and
// options (unsigned payload and a CRC32C: checkedPutOptions), into the limit bucket; no digest, no compression, no
// existence checks or manifest. The objects are deleted after (not
// timed).
func (s *s3) nullBackup(ctx context.Context, img *backupImage, image string) (time.Duration, error) {
	f, err := os.Open(image)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	client, err := s.checkedClient()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	bufs := make(chan []byte, limitWorkers)
	for range limitWorkers {
		bufs <- make([]byte, img.BlockSize)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limitWorkers)
	var keys []string
	for _, o := range img.Objects {
		for _, off := range o.Offsets {
			key := "null/" + strconv.FormatInt(off/img.BlockSize, 10)
			keys = append(keys, key)
			g.Go(func() error {
				buf := <-bufs
				defer func() { bufs <- buf }()
				n, err := f.ReadAt(buf[:min(img.BlockSize, img.SizeBytes-off)], off)
				if err != nil && err != io.EOF {
					return err
				}
				_, err = client.PutObject(gctx, limitBucket, key, bytes.NewReader(buf[:n]), int64(n), checkedPutOptions(buf[:n]))
				return err
			})
		}
	}
	err = g.Wait()
	took := time.Since(start)
	if rerr := s.removeAll(ctx, limitBucket, keys); err == nil {
		err = rerr
	}
	if err != nil {
		return 0, fmt.Errorf("null backup of %s: %w", image, err)
	}
	return took, nil
}

// checkedClient is a client of the gateway that may send checksum headers
// (minio-go's TrailingHeaders), as the engine's block PUTs need.
func (s *s3) checkedClient() (*minio.Client, error) {
	return minio.New(s.endpoint, &minio.Options{Creds: credentials.NewStaticV4(s.access, s.secret, ""),
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath, TrailingHeaders: true})
}

// checkedPutOptions are the engine's options of a block PUT
// (pkg/s3chain/store/s3_checked.go): UNSIGNED-PAYLOAD with the CRC32C of
// data in x-amz-checksum-crc32c, which the server checks.
func checkedPutOptions(data []byte) minio.PutObjectOptions {
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
	return minio.PutObjectOptions{ContentType: "application/octet-stream", DisableContentSha256: true,
		UserMetadata: map[string]string{"x-amz-checksum-crc32c": base64.StdEncoding.EncodeToString(sum[:])}}
}

// removeAll deletes keys of bucket in batches.
func (s *s3) removeAll(ctx context.Context, bucket string, keys []string) error {
	ch := make(chan minio.ObjectInfo)
	go func() {
		defer close(ch)
		for _, k := range keys {
			ch <- minio.ObjectInfo{Key: k}
		}
	}()
	var err error
	for e := range s.client.RemoveObjects(ctx, bucket, ch, minio.RemoveObjectsOptions{}) {
		if e.Err != nil && err == nil { // read on: RemoveObjects ends when every key was sent
			err = fmt.Errorf("remove %s: %w", e.ObjectName, e.Err)
		}
	}
	return err
}
