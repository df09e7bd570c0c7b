package driver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/mount-utils"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// volSize is above XFS's 300 MiB minimum; lvols are sparse.
const volSize = 512 << 20

// nodeEnv is a driver over a real pool on a reflink XFS loop filesystem,
// with a scratch directory for staging and target paths.
type nodeEnv struct {
	t       *testing.T
	ctx     context.Context
	d       *Driver
	pool    *backend.FilePool
	poolDir string
	work    string
	nodeID  string
	extra   func(*Options) // adjusts the options of every driver of e; nil: none
}

func newNodeEnv(t *testing.T) *nodeEnv { return newNodeEnvOn(t, "node-1", nil) }

// newNodeEnvOn is newNodeEnv for a driver of node nodeID (its own pool),
// its options adjusted by extra (nil: none).
func newNodeEnvOn(t *testing.T, nodeID string, extra func(*Options)) *nodeEnv {
	t.Helper()
	testutil.RequireRoot(t)
	fs := testutil.LoopFS(t, "xfs", 8<<30)
	poolDir := filepath.Join(fs, "pool")
	pool, err := backend.Open(poolDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	e := &nodeEnv{t: t, ctx: context.Background(), pool: pool, poolDir: poolDir, work: t.TempDir(), nodeID: nodeID, extra: extra}
	e.d = e.newDriver()
	t.Cleanup(e.cleanup) // runs before TempDir's removal and LoopFS's unmount
	return e
}

func (e *nodeEnv) newDriver() *Driver {
	e.t.Helper()
	d, err := New(e.options("unix:///tmp/x.sock"), e.pool, nil, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// options are the options of a driver of e serving endpoint.
func (e *nodeEnv) options(endpoint string) Options {
	o := Options{NodeID: e.nodeID, Endpoint: endpoint, PoolDir: e.poolDir, StateDir: filepath.Join(e.work, "state")}
	if e.extra != nil {
		e.extra(&o)
	}
	return o
}

// cleanup unmounts everything under the scratch directory and detaches the
// loop devices of every lvol, whatever a failed test left behind.
func (e *nodeEnv) cleanup() {
	infos, _ := mount.ParseMountInfo("/proc/self/mountinfo")
	for i := len(infos) - 1; i >= 0; i-- {
		if strings.HasPrefix(infos[i].MountPoint, resolvePath(e.work)+"/") {
			_ = exec.Command("umount", infos[i].MountPoint).Run()
		}
	}
	lvols, _ := e.pool.List(e.ctx, "")
	for _, lv := range lvols {
		if file, err := e.pool.DataPath(lv.ID); err == nil {
			_ = e.d.loops.detach(e.ctx, file)
		}
	}
}

func (e *nodeEnv) volume(name string, labels map[string]string) backend.LVol {
	e.t.Helper()
	lv, err := e.pool.Create(e.ctx, backend.CreateOptions{Name: name, Kind: backend.KindVolume, SizeBytes: volSize, Labels: labels})
	if err != nil {
		e.t.Fatal(err)
	}
	return lv
}

func (e *nodeEnv) path(name string) string { return filepath.Join(e.work, name) }

func (e *nodeEnv) stage(id, staging string, c *csi.VolumeCapability) error {
	_, err := e.d.NodeStageVolume(e.ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: c})
	return err
}

func (e *nodeEnv) unstage(id, staging string) error {
	_, err := e.d.NodeUnstageVolume(e.ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging})
	return err
}

// loopOf returns the loop device of lvol id, "" when none is attached.
func (e *nodeEnv) loopOf(id string) string {
	e.t.Helper()
	file, err := e.pool.DataPath(id)
	if err != nil {
		e.t.Fatal(err)
	}
	dev, err := e.d.loops.find(e.ctx, file)
	if err != nil {
		e.t.Fatal(err)
	}
	return dev
}

func mountCap(fsType string, mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	return &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType}}}
}

func blockCap(mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	return &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}}
}

const snw = csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER

func wantCode(t *testing.T, err error, want codes.Code, contains ...string) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("got code %v (%v), want %v", got, err, want)
	}
	for _, s := range contains {
		if !strings.Contains(status.Convert(err).Message(), s) {
			t.Errorf("message %q does not mention %q", status.Convert(err).Message(), s)
		}
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestNodeStageRoundTrip stages a fresh volume (formatting it), writes a
// file, unstages, stages again and reads the file back, for ext4 and XFS.
func TestNodeStageRoundTrip(t *testing.T) {
	e := newNodeEnv(t)
	for _, fsType := range []string{"ext4", "xfs"} {
		t.Run(fsType, func(t *testing.T) {
			lv := e.volume("rt-"+fsType, volume.Record{FSType: fsType, AccessType: accessMount}.Encode())
			staging := e.path("stage-" + fsType)
			c := mountCap("", snw) // fsType comes from the label
			mustOK(t, e.stage(lv.ID, staging, c))
			mustOK(t, e.stage(lv.ID, staging, c)) // idempotent
			m, err := mountAt(staging)
			if err != nil || m == nil || m.FsType != fsType {
				t.Fatalf("staging mount = %+v, %v; want a %s mount", m, err, fsType)
			}
			if fsType == "xfs" && !slices.Contains(m.SuperOptions, "nouuid") {
				t.Errorf("xfs mounted without nouuid: %v", m.SuperOptions)
			}
			data := []byte("chainvol " + fsType)
			mustOK(t, os.WriteFile(filepath.Join(staging, "f"), data, 0o644))

			mustOK(t, e.unstage(lv.ID, staging))
			mustOK(t, e.unstage(lv.ID, staging)) // idempotent
			if m, _ := mountAt(staging); m != nil {
				t.Fatalf("still mounted after unstage: %+v", m)
			}
			if dev := e.loopOf(lv.ID); dev != "" {
				t.Fatalf("loop device %s still attached after unstage", dev)
			}
			if _, err := os.Stat(staging); err != nil {
				t.Errorf("unstage removed the staging directory (the CO owns it): %v", err)
			}

			mustOK(t, e.stage(lv.ID, staging, mountCap(fsType, snw)))
			got, err := os.ReadFile(filepath.Join(staging, "f"))
			if err != nil || string(got) != string(data) {
				t.Fatalf("read back %q, %v; want %q", got, err, data)
			}
			mustOK(t, e.unstage(lv.ID, staging))
		})
	}
}

// TestNodeStageErrors checks the codes of invalid or impossible requests.
func TestNodeStageErrors(t *testing.T) {
	e := newNodeEnv(t)
	blockVol := e.volume("blk", volume.Record{AccessType: accessBlock}.Encode())
	staging := e.path("stage")
	multi := mountCap("ext4", csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)
	for _, tc := range []struct {
		name, id, path string
		c              *csi.VolumeCapability
		want           codes.Code
	}{
		{"no id", "", staging, mountCap("", snw), codes.InvalidArgument},
		{"no path", blockVol.ID, "", mountCap("", snw), codes.InvalidArgument},
		{"no capability", blockVol.ID, staging, nil, codes.InvalidArgument},
		{"multi node", blockVol.ID, staging, multi, codes.InvalidArgument},
		{"bad fsType", blockVol.ID, staging, mountCap("vfat", snw), codes.InvalidArgument},
		{"unknown", "vol-doesnotexist", staging, mountCap("", snw), codes.NotFound},
		{"malformed", "../../etc/passwd", staging, mountCap("", snw), codes.NotFound},
		{"block volume as mount", blockVol.ID, staging, mountCap("", snw), codes.FailedPrecondition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, e.stage(tc.id, tc.path, tc.c), tc.want)
		})
	}
	if dev := e.loopOf(blockVol.ID); dev != "" {
		t.Errorf("a refused stage left loop device %s attached", dev)
	}
}

// TestNodeStageRestored: a restored volume is never formatted, and a
// filesystem other than the requested one is refused, with nothing left
// mounted or attached.
func TestNodeStageRestored(t *testing.T) {
	e := newNodeEnv(t)
	staging := e.path("stage")
	blank := e.volume("restored-blank", volume.Record{RestoredFrom: volume.ReadRef("default:chain@b1"), FSType: "ext4"}.Encode())
	wantCode(t, e.stage(blank.ID, staging, mountCap("", snw)), codes.FailedPrecondition, "default:chain@b1", "no filesystem")
	if fs, _ := e.d.mounter.GetDiskFormat(mustFile(t, e.pool, blank.ID)); fs != "" {
		t.Errorf("restored volume was formatted as %q", fs)
	}

	ext := e.volume("ext", volume.Record{FSType: "ext4"}.Encode())
	mustOK(t, e.stage(ext.ID, staging, mountCap("ext4", snw)))
	mustOK(t, e.unstage(ext.ID, staging))
	wantCode(t, e.stage(ext.ID, staging, mountCap("xfs", snw)), codes.FailedPrecondition, "ext4", "xfs")

	for _, lv := range []backend.LVol{blank, ext} {
		if dev := e.loopOf(lv.ID); dev != "" {
			t.Errorf("refused stage of %s left loop device %s attached", lv.Name, dev)
		}
	}
	if m, _ := mountAt(staging); m != nil {
		t.Errorf("refused stage left a mount: %+v", m)
	}
}

func mustFile(t *testing.T, p backend.Pool, id string) string {
	t.Helper()
	f, err := p.DataPath(id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestNodeStageAlreadyExists: another volume's staging path is AlreadyExists
// and the refused volume's loop device is detached again (rollback).
func TestNodeStageAlreadyExists(t *testing.T) {
	e := newNodeEnv(t)
	a, b := e.volume("a", nil), e.volume("b", nil)
	staging := e.path("stage")
	mustOK(t, e.stage(a.ID, staging, mountCap("ext4", snw)))
	wantCode(t, e.stage(b.ID, staging, mountCap("ext4", snw)), codes.AlreadyExists)
	if dev := e.loopOf(b.ID); dev != "" {
		t.Errorf("loop device %s of the refused volume left attached", dev)
	}
	wantCode(t, e.stage(a.ID, staging, mountCap("xfs", snw)), codes.AlreadyExists, "ext4")
	if e.loopOf(a.ID) == "" {
		t.Error("a refused restage detached the staged volume's loop device")
	}
	mustOK(t, e.unstage(a.ID, staging))
}

// TestNodeUnstageIdempotent: unstage succeeds after an out-of-band unmount
// and detach, for an unknown volume, and from a restarted driver that has
// only the kernel's state.
func TestNodeUnstageIdempotent(t *testing.T) {
	e := newNodeEnv(t)
	lv := e.volume("v", nil)
	staging := e.path("stage")

	mustOK(t, e.stage(lv.ID, staging, mountCap("xfs", snw)))
	dev := e.loopOf(lv.ID)
	testutil.Run(t, "umount", staging)
	testutil.Run(t, "losetup", "--detach", dev)
	mustOK(t, e.unstage(lv.ID, staging))

	mustOK(t, e.unstage("vol-unknown", staging))
	mustOK(t, e.unstage("../../x", e.path("never-created")))
	wantCode(t, e.unstage("", staging), codes.InvalidArgument)
	wantCode(t, e.unstage(lv.ID, ""), codes.InvalidArgument)

	mustOK(t, e.stage(lv.ID, staging, mountCap("xfs", snw)))
	restarted := e.newDriver()
	_, err := restarted.NodeUnstageVolume(e.ctx, &csi.NodeUnstageVolumeRequest{VolumeId: lv.ID, StagingTargetPath: staging})
	mustOK(t, err)
	if m, _ := mountAt(staging); m != nil || e.loopOf(lv.ID) != "" {
		t.Fatalf("restarted driver left mount %+v / loop device %q", m, e.loopOf(lv.ID))
	}
}

// TestNodeUnstageDeletedVolume: an lvol deleted while staged is unmounted
// and its loop device released.
func TestNodeUnstageDeletedVolume(t *testing.T) {
	e := newNodeEnv(t)
	lv := e.volume("doomed", nil)
	staging := e.path("stage")
	mustOK(t, e.stage(lv.ID, staging, mountCap("ext4", snw)))
	dev := e.loopOf(lv.ID)
	mustOK(t, e.pool.Delete(e.ctx, lv.ID))
	mustOK(t, e.unstage(lv.ID, staging))
	if m, _ := mountAt(staging); m != nil {
		t.Fatalf("still mounted: %+v", m)
	}
	if _, err := os.Stat(filepath.Join("/sys/block", filepath.Base(dev), "loop")); err == nil {
		t.Errorf("loop device %s of the deleted lvol is still attached", dev)
	}
}

// TestNodeInfoAndCapabilities checks NodeGetInfo and the advertised RPCs.
func TestNodeInfoAndCapabilities(t *testing.T) {
	d, err := New(Options{NodeID: "n1", Endpoint: "unix:///tmp/x.sock", PoolDir: "/p", StateDir: "/s", MaxVolumesPerNode: 7}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := d.NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	mustOK(t, err)
	if info.NodeId != "n1" || info.MaxVolumesPerNode != 7 || info.AccessibleTopology.Segments[TopologyKey] != "n1" {
		t.Errorf("NodeGetInfo = %v", info)
	}
	caps, err := d.NodeGetCapabilities(context.Background(), &csi.NodeGetCapabilitiesRequest{})
	mustOK(t, err)
	var got []csi.NodeServiceCapability_RPC_Type
	for _, c := range caps.Capabilities {
		got = append(got, c.GetRpc().GetType())
	}
	if !slices.Equal(got, nodeCapabilities) || !slices.Contains(got, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME) {
		t.Errorf("capabilities = %v", got)
	}
}
