package store

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"

	"github.com/minio/minio-go/v7"
)

// A block object's bytes are checked by every reader against the keyed
// digest that names it (and opened as AEAD when sealed: FORMAT.md §6), so
// the payload signature of SigV4 adds nothing to them that a reader does
// not check anyway, and it is costly: minio-go signs a PUT over plain HTTP
// chunk by chunk (STREAMING-AWS4-HMAC-SHA256-PAYLOAD), a SHA-256 of every
// byte on the client and again on the server. It was a third of the
// client's CPU in a full backup (BenchmarkBackupS3, docs/BENCHMARKS.md
// "Backups, session 10"). Such objects go UNSIGNED-PAYLOAD (as every PUT
// over HTTPS already does) with an x-amz-checksum-crc32c header, which
// S3 checks before it stores the object: bytes damaged on the way are
// refused at the PUT rather than found at a restore.

type selfCheckedKey struct{}

// SelfChecked marks ctx for a Put of an object whose readers check every
// byte themselves (a block object): the S3 store then sends it without a
// payload signature, with a CRC32C the server checks. A Put with Object
// Lock retention (WithRetention) is sent as before: S3 wants its
// Content-MD5.
func SelfChecked(ctx context.Context) context.Context {
	return context.WithValue(ctx, selfCheckedKey{}, true)
}

func isSelfChecked(ctx context.Context) bool {
	on, _ := ctx.Value(selfCheckedKey{}).(bool)
	return on
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkedPut returns the client and options of a PUT of data: s.checked
// (TrailingHeaders, which minio-go requires of any x-amz-checksum header)
// with UNSIGNED-PAYLOAD and the CRC32C of data (S3 API PutObject,
// x-amz-checksum-crc32c: base64 of the big-endian checksum) when ctx is
// SelfChecked and opts carry no retention, else s.client and opts.
func (s *s3Store) checkedPut(ctx context.Context, opts minio.PutObjectOptions, data []byte) (*minio.Client, minio.PutObjectOptions) {
	if !isSelfChecked(ctx) || opts.Mode != "" || opts.SendContentMd5 || s.checked == nil {
		return s.client, opts
	}
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc32.Checksum(data, castagnoli))
	opts.DisableContentSha256 = true
	// One PUT whatever the size (S3 takes up to 5 GiB in one): minio-go
	// would send an object over its 16 MiB part size as a multipart
	// upload, which the one whole-object checksum header does not fit
	// (S3 refuses the completion), and blocks go up to 64 MiB.
	opts.DisableMultipart = true
	opts.UserMetadata = map[string]string{"x-amz-checksum-crc32c": base64.StdEncoding.EncodeToString(sum[:])}
	return s.checked, opts
}
