package driver

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/pkg/volume"
)

func (e *nodeEnv) publish(id, staging, target string, c *csi.VolumeCapability, ro bool) error {
	_, err := e.d.NodePublishVolume(e.ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging,
		TargetPath: target, VolumeCapability: c, Readonly: ro})
	return err
}

func (e *nodeEnv) unpublish(id, target string) error {
	_, err := e.d.NodeUnpublishVolume(e.ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
	return err
}

// TestNodePublishMount publishes a staged filesystem read-write and
// read-only, checks idempotency and the spec's codes, then unpublishes.
func TestNodePublishMount(t *testing.T) {
	e := newNodeEnv(t)
	lv := e.volume("pub", volume.Record{FSType: "ext4"}.Encode())
	staging, target, roTarget := e.path("stage"), e.path("pods/a/target"), e.path("pods/b/target")
	c := mountCap("", snw)

	wantCode(t, e.publish(lv.ID, staging, target, c, false), codes.FailedPrecondition, "NodeStageVolume")
	mustOK(t, e.stage(lv.ID, staging, c))
	wantCode(t, e.publish(lv.ID, "", target, c, false), codes.FailedPrecondition, "staging_target_path")
	wantCode(t, e.publish(lv.ID, staging, target, nil, false), codes.InvalidArgument)
	wantCode(t, e.publish("vol-unknown", staging, target, c, false), codes.NotFound)

	mustOK(t, e.publish(lv.ID, staging, target, c, false))
	mustOK(t, e.publish(lv.ID, staging, target, c, false)) // idempotent
	wantCode(t, e.publish(lv.ID, staging, target, c, true), codes.AlreadyExists, "readonly")
	mustOK(t, os.WriteFile(filepath.Join(target, "f"), []byte("hello"), 0o644))
	if got, _ := os.ReadFile(filepath.Join(staging, "f")); string(got) != "hello" {
		t.Fatalf("staging path reads %q; the target is not a bind mount of it", got)
	}

	mustOK(t, e.publish(lv.ID, staging, roTarget, c, true)) // SINGLE_NODE_WRITER: a second pod may share it
	err := os.WriteFile(filepath.Join(roTarget, "g"), []byte("x"), 0o644)
	if !errors.Is(err, syscall.EROFS) {
		t.Errorf("write to a read-only publish: %v, want EROFS", err)
	}
	exclusive := mountCap("", csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER)
	wantCode(t, e.publish(lv.ID, staging, e.path("pods/c/target"), exclusive, false), codes.FailedPrecondition, "SINGLE_NODE_SINGLE_WRITER")

	for _, p := range []string{target, roTarget} {
		mustOK(t, e.unpublish(lv.ID, p))
		mustOK(t, e.unpublish(lv.ID, p)) // idempotent
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("target %s not removed: %v", p, err)
		}
	}
	wantCode(t, e.unpublish("", target), codes.InvalidArgument)
	wantCode(t, e.unpublish(lv.ID, ""), codes.InvalidArgument)
	mustOK(t, e.unstage(lv.ID, staging))
}

// TestNodePublishBlock publishes a raw block volume as a device file whose
// written bytes land in the lvol, and reports its size in stats.
func TestNodePublishBlock(t *testing.T) {
	e := newNodeEnv(t)
	lv := e.volume("raw", volume.Record{AccessType: accessBlock}.Encode())
	staging, target := e.path("stage"), e.path("pods/a/dev/target")
	c := blockCap(snw)
	mustOK(t, e.stage(lv.ID, staging, c))
	mustOK(t, e.stage(lv.ID, staging, c))
	mustOK(t, e.publish(lv.ID, staging, target, c, false))
	mustOK(t, e.publish(lv.ID, staging, target, c, false))

	payload := bytes.Repeat([]byte("chainvol"), 512) // 4 KiB, aligned for the direct-I/O loop device
	writeAt(t, target, payload, 1<<20)
	got := make([]byte, len(payload))
	f, err := os.Open(mustFile(t, e.pool, lv.ID))
	mustOK(t, err)
	_, err = f.ReadAt(got, 1<<20)
	f.Close()
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("lvol file holds %q... (%v), want the bytes written to the device file", got[:16], err)
	}

	stats, err := e.d.NodeGetVolumeStats(e.ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: lv.ID, VolumePath: target})
	mustOK(t, err)
	if u := stats.Usage; len(u) != 1 || u[0].Unit != csi.VolumeUsage_BYTES || u[0].Total != volSize {
		t.Errorf("block stats = %v, want total %d bytes", u, volSize)
	}

	_, err = e.pool.Resize(e.ctx, lv.ID, 2*volSize)
	mustOK(t, err)
	grown, err := e.d.NodeExpandVolume(e.ctx, &csi.NodeExpandVolumeRequest{VolumeId: lv.ID, VolumePath: target,
		StagingTargetPath: staging, VolumeCapability: c})
	mustOK(t, err)
	if grown.CapacityBytes != 2*volSize {
		t.Errorf("capacity_bytes after expansion = %d, want %d", grown.CapacityBytes, 2*volSize)
	}
	if size, err := deviceSize(target); err != nil || size != 2*volSize {
		t.Errorf("published device is %d bytes (%v), want %d", size, err, 2*volSize)
	}

	exclusive := blockCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER)
	wantCode(t, e.publish(lv.ID, staging, e.path("pods/b/dev/target"), exclusive, false), codes.FailedPrecondition)
	mustOK(t, e.unpublish(lv.ID, target))
	mustOK(t, e.unpublish(lv.ID, target))
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("target file not removed: %v", err)
	}
	mustOK(t, e.unstage(lv.ID, staging))
	if dev := e.loopOf(lv.ID); dev != "" {
		t.Errorf("loop device %s still attached", dev)
	}
}

func writeAt(t *testing.T, path string, b []byte, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	mustOK(t, err)
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	mustOK(t, f.Sync())
}
