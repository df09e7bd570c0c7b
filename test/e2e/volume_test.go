package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

const (
	mib = int64(1) << 20
	// volSize is the size of most test volumes (XFS needs >= 300 MiB).
	volSize = 512 * mib
)

// rpcTimeout bounds one CSI call, like a sidecar's --timeout.
const rpcTimeout = 30 * time.Second

func rpcCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	t.Cleanup(cancel)
	return ctx
}

// mountCap is a SINGLE_NODE_WRITER mount capability with fsType ("" = none asked).
func mountCap(fsType string) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

// blockCap is a SINGLE_NODE_WRITER raw block capability.
func blockCap() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

// pvcParams are the parameters the external-provisioner adds with
// --extra-create-metadata.
func pvcParams(ns, name string) map[string]string {
	return map[string]string{"csi.storage.k8s.io/pvc/namespace": ns, "csi.storage.k8s.io/pvc/name": name}
}

// createVolume creates an empty volume and fails the test on error.
func createVolume(t *testing.T, ctrl csi.ControllerClient, name string, size int64, c *csi.VolumeCapability, params map[string]string) *csi.Volume {
	t.Helper()
	resp, err := ctrl.CreateVolume(rpcCtx(t), &csi.CreateVolumeRequest{
		Name: name, CapacityRange: &csi.CapacityRange{RequiredBytes: size},
		VolumeCapabilities: []*csi.VolumeCapability{c}, Parameters: params,
	})
	if err != nil {
		t.Fatalf("CreateVolume %s: %v", name, err)
	}
	return resp.GetVolume()
}

// published is a staged and published volume; Path is the mount directory
// or, for a block volume, the device file.
type published struct {
	node    csi.NodeClient
	volID   string
	staging string
	Path    string
	done    bool
}

// stagePublish stages and publishes a volume as the kubelet would and
// returns where the application sees it. It is unpublished and unstaged
// when the test ends unless unpublishUnstage did it before.
func stagePublish(t *testing.T, node csi.NodeClient, volID string, c *csi.VolumeCapability) *published {
	t.Helper()
	dir := t.TempDir()
	p := &published{node: node, volID: volID, staging: filepath.Join(dir, "staging"), Path: filepath.Join(dir, "target")}
	if _, err := node.NodeStageVolume(rpcCtx(t), &csi.NodeStageVolumeRequest{
		VolumeId: volID, StagingTargetPath: p.staging, VolumeCapability: c,
	}); err != nil {
		t.Fatalf("NodeStageVolume %s: %v", volID, err)
	}
	// Registered after TempDir, so it runs before the directory is removed:
	// never RemoveAll through a live mount.
	t.Cleanup(func() {
		if err := p.release(); err != nil {
			t.Error(err)
		}
	})
	if _, err := node.NodePublishVolume(rpcCtx(t), &csi.NodePublishVolumeRequest{
		VolumeId: volID, StagingTargetPath: p.staging, TargetPath: p.Path, VolumeCapability: c,
	}); err != nil {
		t.Fatalf("NodePublishVolume %s: %v", volID, err)
	}
	return p
}

// unpublishUnstage unpublishes and unstages a volume that stagePublish
// published, failing the test on error.
func unpublishUnstage(t *testing.T, p *published) {
	t.Helper()
	if err := p.release(); err != nil {
		t.Fatal(err)
	}
}

func (p *published) release() error {
	if p.done {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	if _, err := p.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: p.volID, TargetPath: p.Path}); err != nil {
		return fmt.Errorf("NodeUnpublishVolume %s: %w", p.volID, err)
	}
	if _, err := p.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: p.volID, StagingTargetPath: p.staging}); err != nil {
		return fmt.Errorf("NodeUnstageVolume %s: %w", p.volID, err)
	}
	p.done = true
	return nil
}
