package driver

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// serve runs a second driver over e's pool on a unix socket of its own,
// with the interceptors of Run, and returns clients for it.
func (e *nodeEnv) serve() (csi.ControllerClient, csi.NodeClient) {
	conn := e.serveConn()
	return csi.NewControllerClient(conn), csi.NewNodeClient(conn)
}

// serveConn is serve's connection, for clients of any service.
func (e *nodeEnv) serveConn() *grpc.ClientConn {
	e.t.Helper()
	sock := filepath.Join(e.work, "csi.sock")
	d, err := New(e.options("unix://"+sock), e.pool, nil, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close(); cancel(); <-done })
	id := csi.NewIdentityClient(conn)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := id.Probe(e.ctx, &csi.ProbeRequest{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			e.t.Fatalf("driver on %s not serving: %v", sock, err)
		}
	}
	return conn
}

// TestMalformedIDs: an id that cannot be a chainvol id is NotFound for
// every RPC that takes one, and deleting it succeeds (already gone), over
// gRPC as the sidecars and kubelet call (issue 14, item 7). An empty id is
// a missing required field: InvalidArgument.
func TestMalformedIDs(t *testing.T) {
	e := newNodeEnv(t)
	ctrl, node := e.serve()
	ctx := e.ctx
	mc := mountCap("ext4", snw)
	staging, target := e.path("staging"), e.path("target")
	rng := &csi.CapacityRange{RequiredBytes: volSize}
	snapSrc := func(id string) *csi.VolumeContentSource {
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: id}}}
	}
	volSrc := func(id string) *csi.VolumeContentSource {
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: id}}}
	}
	rpcs := []struct {
		name       string
		call       func(id string) error
		bad, empty codes.Code
	}{
		{"ControllerExpandVolume", func(id string) error {
			_, err := ctrl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: id, CapacityRange: rng})
			return err
		}, codes.NotFound, codes.InvalidArgument},
		{"ControllerGetVolume", func(id string) error {
			_, err := ctrl.ControllerGetVolume(ctx, &csi.ControllerGetVolumeRequest{VolumeId: id})
			return err
		}, codes.NotFound, codes.InvalidArgument},
		{"ValidateVolumeCapabilities", func(id string) error {
			_, err := ctrl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: id, VolumeCapabilities: []*csi.VolumeCapability{mc}})
			return err
		}, codes.NotFound, codes.InvalidArgument},
		{"DeleteVolume", func(id string) error {
			_, err := ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
			return err
		}, codes.OK, codes.InvalidArgument},
		{"CreateSnapshot", func(id string) error {
			_, err := ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: id})
			return err
		}, codes.NotFound, codes.InvalidArgument},
		{"CreateSnapshot backup", func(id string) error {
			_, err := ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "b", SourceVolumeId: id, Parameters: map[string]string{ParamBackup: "true"}})
			return err
		}, codes.NotFound, codes.InvalidArgument},
		{"GetSnapshot", func(id string) error {
			_, err := ctrl.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: id})
			return err
		}, codes.NotFound, codes.InvalidArgument},
		{"DeleteSnapshot", func(id string) error {
			_, err := ctrl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: id})
			return err
		}, codes.OK, codes.InvalidArgument},
		{"CreateVolume from snapshot", func(id string) error {
			if id == "" {
				return status.Error(codes.InvalidArgument, "not applicable")
			}
			_, err := ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "c", CapacityRange: rng,
				VolumeCapabilities: []*csi.VolumeCapability{mc}, VolumeContentSource: snapSrc(id)})
			return err
		}, codes.NotFound, codes.InvalidArgument},
		{"CreateVolume from volume", func(id string) error {
			if id == "" {
				return status.Error(codes.InvalidArgument, "not applicable")
			}
			_, err := ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "v", CapacityRange: rng,
				VolumeCapabilities: []*csi.VolumeCapability{mc}, VolumeContentSource: volSrc(id)})
			return err
		}, codes.NotFound, codes.InvalidArgument},
		{"NodeStageVolume", func(id string) error {
			_, err := node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: mc})
			return err
		}, codes.NotFound, codes.InvalidArgument},
		{"NodeUnstageVolume", func(id string) error {
			_, err := node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging})
			return err
		}, codes.NotFound, codes.InvalidArgument},
		{"NodePublishVolume", func(id string) error {
			_, err := node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging, TargetPath: target, VolumeCapability: mc})
			return err
		}, codes.NotFound, codes.InvalidArgument},
		{"NodeUnpublishVolume", func(id string) error {
			_, err := node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
			return err
		}, codes.NotFound, codes.InvalidArgument},
		{"NodeGetVolumeStats", func(id string) error {
			_, err := node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: target})
			return err
		}, codes.NotFound, codes.InvalidArgument},
		{"NodeExpandVolume", func(id string) error {
			_, err := node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: id, VolumePath: target, CapacityRange: rng})
			return err
		}, codes.NotFound, codes.InvalidArgument},
	}
	malformedIDs := []string{"../../etc", "..", "a/../../../etc", ".", "/", strings.Repeat("v", 500),
		"vol-0123456789abcdef0123/../x", "vol-0123456789ABCDEF0123", "backup:../../etc", "backup:t:../c@latest",
		"backup:t:c@" + strings.Repeat("1", 130)}
	for _, rpc := range rpcs {
		for _, id := range malformedIDs {
			if got := status.Code(rpc.call(id)); got != rpc.bad {
				t.Errorf("%s(%.40q): %v, want %v", rpc.name, id, rpc.call(id), rpc.bad)
			}
		}
		if got := status.Code(rpc.call("")); got != rpc.empty {
			t.Errorf("%s(\"\"): %v, want %v", rpc.name, got, rpc.empty)
		}
	}
	// A missing required field is reported first, whatever the id (the
	// order csi-sanity checks).
	for name, call := range map[string]func() error{
		"NodePublishVolume without target_path": func() error {
			_, err := node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "fake-id", StagingTargetPath: staging, VolumeCapability: mc})
			return err
		},
		"NodeUnstageVolume without staging_target_path": func() error {
			_, err := node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: "fake-id"})
			return err
		},
		"NodeGetVolumeStats without volume_path": func() error {
			_, err := node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "fake-id"})
			return err
		},
		"CreateSnapshot without name": func() error {
			_, err := ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: "../../etc"})
			return err
		},
		"ControllerExpandVolume without capacity_range": func() error {
			_, err := ctrl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: ".."})
			return err
		},
	} {
		if got := status.Code(call()); got != codes.InvalidArgument {
			t.Errorf("%s, malformed id: %v, want InvalidArgument", name, got)
		}
	}
	for _, id := range malformedIDs {
		resp, err := ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: id})
		if err != nil || len(resp.GetEntries()) != 0 {
			t.Errorf("ListSnapshots(%.40q) = %v, %v; want an empty list", id, resp.GetEntries(), err)
		}
	}
	lvols, err := e.pool.List(ctx, "")
	if err != nil || len(lvols) != 0 {
		t.Errorf("pool holds %d lvols after refused requests (%v), want none", len(lvols), err)
	}
}
