package driver

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
	"k8s.io/mount-utils"
)

// nodeCapabilities are advertised by NodeGetCapabilities. GET_VOLUME_HEALTH
// and GET_STORAGE_HEALTH are served by health.go.
var nodeCapabilities = []csi.NodeServiceCapability_RPC_Type{
	csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
	csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
	csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
	csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
	csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH,
	csi.NodeServiceCapability_RPC_GET_STORAGE_HEALTH,
}

// NodeGetCapabilities lists nodeCapabilities (CSI spec "NodeGetCapabilities").
func (d *node) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	caps := make([]*csi.NodeServiceCapability, 0, len(nodeCapabilities))
	for _, c := range nodeCapabilities {
		caps = append(caps, &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{
			Rpc: &csi.NodeServiceCapability_RPC{Type: c}}})
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

// NodeGetInfo returns the node id, the volume limit (0: unlimited) and this
// node's topology segment, which pins volumes to the node whose pool holds
// them (CSI spec "NodeGetInfo").
func (d *node) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{
		NodeId:             d.opts.NodeID,
		MaxVolumesPerNode:  d.opts.MaxVolumesPerNode,
		AccessibleTopology: d.topology(),
	}, nil
}

// The node keeps no state of its own: what is staged and published where is
// read from the kernel's mount table and device numbers each time, so every
// RPC is idempotent across driver restarts.

const mountInfoPath = "/proc/self/mountinfo"

// mountAt returns the mount at p (the topmost when several are stacked), or
// nil when p is not a mount point or does not exist.
func mountAt(p string) (*mount.MountInfo, error) {
	p = resolvePath(p)
	infos, err := mount.ParseMountInfo(mountInfoPath)
	if err != nil {
		return nil, fmt.Errorf("read the mount table: %w", err)
	}
	var top *mount.MountInfo
	for i := range infos {
		if infos[i].MountPoint == p {
			top = &infos[i] // later lines are mounted on top of earlier ones
		}
	}
	return top, nil
}

// mountsOf lists the mount points exposing the block device dev whose device
// number is rdev: mounts of its filesystem (including bind mounts of them)
// and bind mounts of the device file itself (raw block publishes).
func mountsOf(dev string, rdev uint64) ([]string, error) {
	infos, err := mount.ParseMountInfo(mountInfoPath)
	if err != nil {
		return nil, fmt.Errorf("read the mount table: %w", err)
	}
	var out []string
	for i := range infos {
		m := &infos[i]
		if onDevice(m, rdev) || (path.Base(m.Root) == filepath.Base(dev) && isDevice(m.MountPoint, rdev)) {
			out = append(out, m.MountPoint)
		}
	}
	return out, nil
}

// resolvePath resolves symlinks as the kernel does for the mount table.
func resolvePath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// onDevice reports whether m is a mount of the filesystem on device rdev.
func onDevice(m *mount.MountInfo, rdev uint64) bool {
	return uint32(m.Major) == unix.Major(rdev) && uint32(m.Minor) == unix.Minor(rdev)
}

// deviceNumber returns the device number of the block device file dev.
func deviceNumber(dev string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", dev, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return 0, fmt.Errorf("%s is not a block device", dev)
	}
	return st.Rdev, nil
}

// isDevice reports whether p is the block device rdev (a device file, or a
// bind mount of one).
func isDevice(p string, rdev uint64) bool {
	var st unix.Stat_t
	return unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK && st.Rdev == rdev
}

// deviceSize returns the size in bytes of the block device at p.
func deviceSize(p string) (int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := unix.IoctlGetUint64(int(f.Fd()), unix.BLKGETSIZE64)
	if err != nil {
		return 0, fmt.Errorf("BLKGETSIZE64 %s: %w", p, err)
	}
	return int64(n), nil
}

// detachOrphan detaches the loop device dev when its backing file lies in
// the pool: the lvol was deleted while staged and nothing else will ever
// release the device. Anything else is left alone.
func (d *node) detachOrphan(ctx context.Context, dev string) error {
	if !strings.HasPrefix(dev, "/dev/loop") {
		return nil
	}
	backing := strings.TrimSuffix(loopBacking(dev), " (deleted)")
	if backing == "" || !strings.HasPrefix(backing, filepath.Clean(d.opts.PoolDir)+"/") {
		// not a loop device, already detached, or not ours
		return nil
	}
	klog.InfoS("detaching the loop device of a deleted lvol", "device", dev, "file", backing)
	if out, err := d.exec.CommandContext(ctx, "losetup", "--detach", dev).CombinedOutput(); err != nil {
		return fmt.Errorf("losetup --detach %s: %v: %s", dev, err, strings.TrimSpace(string(out)))
	}
	return nil
}
