package driver

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// poolFullRatio is the fraction of used pool space above which volumes and
// the node's storage are reported degraded: thin lvols may fail writes soon.
const poolFullRatio = 0.95

// healthEntry builds one abnormal-health entry (CSI spec "VolumeHealth").
func healthEntry(t csi.VolumeHealthErrorType, reason, msg string) *csi.VolumeHealth_VolumeHealthEntry {
	return &csi.VolumeHealth_VolumeHealthEntry{Status: t, Reason: reason, Message: msg}
}

// volumeHealth checks a volume's backing lvol file (missing: DATA_LOSS;
// unreadable: INACCESSIBLE), the pool's fullness and an instant restore's
// hydration (hydrationHealth), and returns the data file's path ("" when
// it is missing: nothing left for the node to probe). Errors: those of
// usableVolume.
func (d *core) volumeHealth(ctx context.Context, id string) (*csi.VolumeHealth, string, error) {
	lv, err := d.usableVolume(ctx, id)
	if err != nil {
		return nil, "", err
	}
	h := &csi.VolumeHealth{VolumeId: lv.ID, HealthStatuses: d.hydrationHealth(lv)}
	path, err := d.pool.DataPath(lv.ID)
	if err == nil {
		_, err = os.Stat(path)
	}
	switch {
	case errors.Is(err, os.ErrNotExist), errors.Is(err, backend.ErrNotFound):
		h.HealthStatuses = append(h.HealthStatuses, healthEntry(csi.VolumeHealthErrorType_DATA_LOSS, "LvolMissing",
			fmt.Sprintf("the backing lvol of %s is missing from the pool: %v", lv.ID, err)))
		return h, "", nil
	case err != nil:
		// The pool's filesystem fails (EIO: shut down, or its disk): the
		// lvol may well be intact, and the node's probes say more.
		h.HealthStatuses = append(h.HealthStatuses, healthEntry(csi.VolumeHealthErrorType_INACCESSIBLE, "PoolIOError",
			fmt.Sprintf("the pool cannot read the backing lvol of %s: %v", lv.ID, err)))
	}
	if msg := d.poolNearlyFull(ctx); msg != "" {
		h.HealthStatuses = append(h.HealthStatuses, healthEntry(csi.VolumeHealthErrorType_DEGRADED, "PoolNearlyFull", msg))
	}
	return h, path, nil
}

// poolNearlyFull returns a message when the pool is above poolFullRatio, "" otherwise.
func (d *core) poolNearlyFull(ctx context.Context) string {
	c, err := d.pool.Capacity(ctx)
	if err != nil || c.TotalBytes == 0 {
		return ""
	}
	used := float64(c.TotalBytes-c.AvailableBytes) / float64(c.TotalBytes)
	if used < poolFullRatio {
		return ""
	}
	return fmt.Sprintf("the pool is %.0f%% full (%d of %d bytes free); thin volumes may fail writes", used*100, c.AvailableBytes, c.TotalBytes)
}

// ControllerGetVolumeHealth reports one volume's health (CSI spec "ControllerGetVolumeHealth").
func (d *controller) ControllerGetVolumeHealth(ctx context.Context, req *csi.ControllerGetVolumeHealthRequest) (*csi.ControllerGetVolumeHealthResponse, error) {
	h, _, err := d.volumeHealth(ctx, req.GetVolumeId())
	if err != nil {
		return nil, volumeError("", err)
	}
	return &csi.ControllerGetVolumeHealthResponse{VolumeHealth: h}, nil
}

// ControllerListVolumeHealth lists the volumes with an abnormal health
// entry, paginated by id (CSI spec "ControllerListVolumeHealth").
func (d *controller) ControllerListVolumeHealth(ctx context.Context, req *csi.ControllerListVolumeHealthRequest) (*csi.ControllerListVolumeHealthResponse, error) {
	vols, err := d.ListVolumes(ctx, &csi.ListVolumesRequest{})
	if err != nil {
		return nil, err
	}
	var ids []string
	abnormal := map[string]*csi.VolumeHealth{}
	for _, e := range vols.GetEntries() {
		h, _, err := d.volumeHealth(ctx, e.GetVolume().GetVolumeId())
		if errors.Is(err, backend.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, volumeError("", err)
		}
		if len(h.HealthStatuses) > 0 {
			ids = append(ids, h.VolumeId)
			abnormal[h.VolumeId] = h
		}
	}
	entries, next, err := page(ids, req.GetMaxEntries(), req.GetStartingToken(), func(id string) *csi.VolumeHealth { return abnormal[id] })
	if err != nil {
		return nil, volumeError("", err)
	}
	return &csi.ControllerListVolumeHealthResponse{Entries: entries, NextToken: next}, nil
}

// NodeGetVolumeHealth adds the node's view to the volume's health (CSI spec
// "NodeGetVolumeHealth"): given a staging or publish path, it probes the
// loop device and the filesystems mounted there (nodeHealth) and reports
// I/O errors, a shut-down or read-only-remounted filesystem, a loop
// device that no longer backs the lvol, and an instant restore still
// hydrating (hydrationHealth; CSI 1.13 removed NodeGetVolumeStats'
// volume condition, so this is where the kubelet's health monitor reads it).
func (d *node) NodeGetVolumeHealth(ctx context.Context, req *csi.NodeGetVolumeHealthRequest) (*csi.NodeGetVolumeHealthResponse, error) {
	staging, publish := req.GetStagingTargetPath(), req.GetVolumePublishPath()
	if staging != "" {
		if _, err := os.Stat(staging); errors.Is(err, os.ErrNotExist) {
			return nil, nodeError("", volume.Mark(volume.ErrNotAtPath, "staging path %s does not exist", staging))
		}
	}
	h, file, err := d.volumeHealth(ctx, req.GetVolumeId())
	if err != nil {
		return nil, nodeError("", err)
	}
	if file != "" {
		h.HealthStatuses = append(h.HealthStatuses, d.nodeHealth(ctx, h.VolumeId, file, staging, publish)...)
	}
	return &csi.NodeGetVolumeHealthResponse{VolumeHealth: h}, nil
}

// NodeGetStorageHealth reports the pool: unreachable when it does not
// answer, degraded when nearly full (CSI spec "NodeGetStorageHealth").
func (d *node) NodeGetStorageHealth(ctx context.Context, _ *csi.NodeGetStorageHealthRequest) (*csi.NodeGetStorageHealthResponse, error) {
	resp := &csi.NodeGetStorageHealthResponse{}
	if _, err := d.pool.Capacity(ctx); err != nil {
		resp.BackendHealth = append(resp.BackendHealth, &csi.NodeGetStorageHealthResponse_StorageBackendHealth{
			Status: csi.StorageHealthErrorType_STORAGE_UNREACHABLE, Reason: "PoolUnavailable",
			Message: fmt.Sprintf("the lvol pool at %s does not answer: %v", d.opts.PoolDir, err)})
	} else if msg := d.poolNearlyFull(ctx); msg != "" {
		resp.BackendHealth = append(resp.BackendHealth, &csi.NodeGetStorageHealthResponse_StorageBackendHealth{
			Status: csi.StorageHealthErrorType_STORAGE_DEGRADED, Reason: "PoolNearlyFull", Message: msg})
	}
	return resp, nil
}
