package driver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/backend"
)

// metaEnv is a driver served by Run on a unix socket over a real pool on a
// reflink XFS loop filesystem, with gRPC clients, as the
// external-snapshot-metadata sidecar and the provisioner reach it.
type metaEnv struct {
	t    testing.TB
	ctx  context.Context
	pool *backend.FilePool
	conn *grpc.ClientConn
	ctl  csi.ControllerClient
	meta csi.SnapshotMetadataClient
	// state is the driver's state directory (the embedded target's
	// backups are in its backups/).
	state string
}

// stateBackups is the directory of the embedded default target.
func (e *metaEnv) stateBackups() string { return filepath.Join(e.state, "backups") }

// startMetaEnv starts a driver on a fresh pool; targets are its
// -backup-target list (nil: the embedded file target), creds its
// credentials file.
func startMetaEnv(t testing.TB, targets []string, creds string) *metaEnv {
	t.Helper()
	return startMetaEnvOn(t, 4<<30, targets, creds)
}

// startMetaEnvOn is startMetaEnv on a pool filesystem of fsSize bytes.
func startMetaEnvOn(t testing.TB, fsSize int64, targets []string, creds string) *metaEnv {
	t.Helper()
	testutil.RequireRoot(t)
	fs := testutil.LoopFS(t, "xfs", fsSize)
	pool, err := backend.Open(filepath.Join(fs, "pool"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := Options{NodeID: "node-1", Endpoint: "unix://" + filepath.Join(dir, "csi.sock"), PoolDir: filepath.Join(fs, "pool"),
		StateDir: filepath.Join(dir, "state"), DriverName: DefaultDriverName, BackupTargets: targets, BackupCredentialsFile: creds}
	d, err := New(opts, pool, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	conn, err := grpc.NewClient(opts.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		cancel()
		<-done
		pool.Close()
	})
	e := &metaEnv{t: t, ctx: context.Background(), pool: pool, conn: conn,
		ctl: csi.NewControllerClient(conn), meta: csi.NewSnapshotMetadataClient(conn), state: opts.StateDir}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := csi.NewIdentityClient(conn).Probe(e.ctx, &csi.ProbeRequest{}); err == nil {
			return e
		} else if time.Now().After(deadline) {
			t.Fatalf("driver not ready: %v", err)
		}
	}
}

// s3Opts starts versitygw and returns a -backup-target list naming it
// and its credentials file.
func s3Opts(t testing.TB) ([]string, string) {
	t.Helper()
	srv := testutil.StartS3(t)
	creds := filepath.Join(t.TempDir(), "creds")
	data := "accessKeyID=" + srv.AccessKey + "\nsecretAccessKey=" + srv.SecretKey + "\n"
	if err := os.WriteFile(creds, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"offsite=" + srv.URL("cbt")}, creds
}

// blockVolume creates a block volume of size bytes and returns its id.
func (e *metaEnv) blockVolume(name string, size int64) string {
	e.t.Helper()
	resp, err := e.ctl.CreateVolume(e.ctx, &csi.CreateVolumeRequest{Name: name, CapacityRange: &csi.CapacityRange{RequiredBytes: size},
		VolumeCapabilities: []*csi.VolumeCapability{blockCap(snw)}})
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.GetVolume().GetVolumeId()
}

// snapshot takes a local snapshot (or, backup, a backup waited for until
// ready) of volume id and returns its snapshot id.
func (e *metaEnv) snapshot(name, id string, backup bool) string {
	e.t.Helper()
	req := &csi.CreateSnapshotRequest{Name: name, SourceVolumeId: id}
	if backup {
		req.Parameters = map[string]string{"backup": "true"}
	}
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := e.ctl.CreateSnapshot(e.ctx, req)
		if err != nil {
			e.t.Fatalf("CreateSnapshot %s: %v", name, err)
		}
		if resp.GetSnapshot().GetReadyToUse() {
			return resp.GetSnapshot().GetSnapshotId()
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("snapshot %s not ready", name)
		}
	}
}

// data returns the bytes of lvol id's data file.
func (e *metaEnv) data(id string) []byte {
	e.t.Helper()
	path, err := e.pool.DataPath(id)
	if err != nil {
		e.t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// scribble writes n runs of random bytes (every fifth one zeros) of
// 4 KiB to 64 KiB at random 4 KiB-aligned offsets of lvol id's data file,
// then syncs it.
func (e *metaEnv) scribble(id string, rng *rand.Rand, n int) {
	e.t.Helper()
	path, err := e.pool.DataPath(id)
	if err != nil {
		e.t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	for i := range n {
		buf := make([]byte, 4096*(1+rng.IntN(16)))
		if i%5 != 4 {
			for j := range buf {
				buf[j] = byte(rng.UintN(255) + 1)
			}
		}
		off := rng.Int64N((st.Size()-int64(len(buf)))/4096) * 4096
		if _, err := f.WriteAt(buf, off); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		e.t.Fatal(err)
	}
}

// metaStream is a received answer: its type, capacity and ranges.
type metaStream struct {
	kind     csi.BlockMetadataType
	capacity int64
	ranges   []*csi.BlockMetadata
	messages int
}

// recvAll reads a stream to its end, checking the CSI spec's rules for it:
// one type and capacity in every message, at most max tuples a message,
// ranges in order without overlap, FIXED_LENGTH tuples of one size.
func recvAll[T interface {
	GetBlockMetadataType() csi.BlockMetadataType
	GetVolumeCapacityBytes() int64
	GetBlockMetadata() []*csi.BlockMetadata
}](t testing.TB, recv func() (T, error), maxResults int32) (metaStream, error) {
	t.Helper()
	var s metaStream
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return s, nil
		} else if err != nil {
			return s, err
		}
		if s.messages == 0 {
			s.kind, s.capacity = m.GetBlockMetadataType(), m.GetVolumeCapacityBytes()
		} else if m.GetBlockMetadataType() != s.kind || m.GetVolumeCapacityBytes() != s.capacity {
			t.Fatalf("message %d: type %v capacity %d, the first said %v %d", s.messages, m.GetBlockMetadataType(), m.GetVolumeCapacityBytes(), s.kind, s.capacity)
		}
		if maxResults > 0 && len(m.GetBlockMetadata()) > int(maxResults) {
			t.Fatalf("message %d holds %d tuples, max_results %d", s.messages, len(m.GetBlockMetadata()), maxResults)
		}
		s.messages++
		for _, b := range m.GetBlockMetadata() {
			if b.GetSizeBytes() <= 0 {
				t.Fatalf("tuple %v has no size", b)
			}
			if k := len(s.ranges) - 1; k >= 0 && s.ranges[k].GetByteOffset()+s.ranges[k].GetSizeBytes() > b.GetByteOffset() {
				t.Fatalf("tuple %v overlaps or precedes %v", b, s.ranges[k])
			}
			if s.kind == csi.BlockMetadataType_FIXED_LENGTH && len(s.ranges) > 0 && b.GetSizeBytes() != s.ranges[0].GetSizeBytes() {
				t.Fatalf("FIXED_LENGTH tuple %v, the first was %v", b, s.ranges[0])
			}
			s.ranges = append(s.ranges, b)
		}
	}
}

// allocated calls GetMetadataAllocated and reads the whole stream.
func (e *metaEnv) allocated(id string, start int64, maxResults int32) (metaStream, error) {
	e.t.Helper()
	st, err := e.meta.GetMetadataAllocated(e.ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: id, StartingOffset: start, MaxResults: maxResults})
	if err != nil {
		return metaStream{}, err
	}
	return recvAll(e.t, st.Recv, maxResults)
}

// delta calls GetMetadataDelta and reads the whole stream.
func (e *metaEnv) delta(base, target string, start int64, maxResults int32) (metaStream, error) {
	e.t.Helper()
	st, err := e.meta.GetMetadataDelta(e.ctx, &csi.GetMetadataDeltaRequest{BaseSnapshotId: base, TargetSnapshotId: target,
		StartingOffset: start, MaxResults: maxResults})
	if err != nil {
		return metaStream{}, err
	}
	return recvAll(e.t, st.Recv, maxResults)
}

// covered marks the 4 KiB blocks the ranges touch, of a volume of n
// bytes, and returns them with the bytes the ranges cover (clipped at n).
func covered(ranges []*csi.BlockMetadata, n int64) ([]bool, int64) {
	in := make([]bool, (n+4095)/4096)
	var total int64
	for _, r := range ranges {
		lo, hi := r.GetByteOffset(), min(r.GetByteOffset()+r.GetSizeBytes(), n)
		total += max(hi-lo, 0)
		for b := lo / 4096; b*4096 < hi; b++ {
			in[b] = true
		}
	}
	return in, total
}

// checkCovers fails unless every 4 KiB block where want reports true lies
// inside the ranges, and reports the bytes those blocks hold and the bytes
// the ranges cover.
func checkCovers(t *testing.T, what string, ranges []*csi.BlockMetadata, n int64, want func(lo, hi int64) bool) (need, got int64) {
	t.Helper()
	in, got := covered(ranges, n)
	missed := 0
	for b := int64(0); b*4096 < n; b++ {
		if want(b*4096, min(b*4096+4096, n)) {
			need += 4096
			if !in[b] {
				missed++
			}
		}
	}
	if missed > 0 {
		t.Fatalf("%s: %d 4 KiB blocks that should be reported are in no range", what, missed)
	}
	return need, got
}

// nonZero reports whether b[lo:hi] holds a non-zero byte.
func nonZero(b []byte) func(lo, hi int64) bool {
	return func(lo, hi int64) bool {
		if lo >= int64(len(b)) {
			return false
		}
		return !allZero(b[lo:min(hi, int64(len(b)))])
	}
}

// changed reports whether a[lo:hi] and b[lo:hi] differ (bytes past the end
// of a are zeros).
func changed(a, b []byte) func(lo, hi int64) bool {
	return func(lo, hi int64) bool {
		x := make([]byte, hi-lo)
		if lo < int64(len(a)) {
			copy(x, a[lo:min(hi, int64(len(a)))])
		}
		return !bytes.Equal(x, b[lo:hi])
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
