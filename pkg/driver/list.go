package driver

import (
	"context"
	"sort"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/volume"
)

// tokenPrefix marks the pagination tokens this driver issues.
const tokenPrefix = "after:"

// page cuts one page out of ids sorted ascending (CSI spec "ListVolumes"
// pagination: ListVolumes, ListSnapshots, ControllerListVolumeHealth) and
// returns its entries, entry(id) for each id of the page, in order, and
// the next_token ("" on the last page). The token names the last id of the
// previous page, so deletions between calls neither repeat nor skip
// entries. A negative max_entries is InvalidArgument; a token this driver
// did not issue is Aborted, as the spec asks (volume.ClassBusy: the CO
// starts the listing again), for the caller's mapper.
func page[E any](ids []string, maxEntries int32, token string, entry func(id string) E) (entries []E, next string, err error) {
	if maxEntries < 0 {
		return nil, "", status.Error(codes.InvalidArgument, "max_entries must not be negative")
	}
	after, ok := strings.CutPrefix(token, tokenPrefix)
	if token != "" && !ok {
		return nil, "", volume.Refuse(volume.ClassBusy, "starting_token %q was not issued by this driver", token)
	}
	start := sort.SearchStrings(ids, after)
	if after != "" && start < len(ids) && ids[start] == after {
		start++
	}
	end := len(ids)
	if maxEntries > 0 && start+int(maxEntries) < end {
		end = start + int(maxEntries)
		next = tokenPrefix + ids[end-1]
	}
	for _, id := range ids[start:end] {
		entries = append(entries, entry(id))
	}
	return entries, next, nil
}

// ListVolumes lists the usable (ready or hydrating) volumes of the local pool (CSI spec "ListVolumes").
func (d *controller) ListVolumes(ctx context.Context, req *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	lvs, err := d.pool.List(ctx, "volume")
	if err != nil {
		return nil, volumeError("list lvols", err)
	}
	ids := make([]string, 0, len(lvs))
	for _, lv := range lvs {
		if volume.Of(lv).Usable() {
			ids = append(ids, lv.ID)
		}
	}
	byID := map[string]int{}
	for i, lv := range lvs {
		byID[lv.ID] = i
	}
	entries, next, err := page(ids, req.GetMaxEntries(), req.GetStartingToken(), func(id string) *csi.ListVolumesResponse_Entry {
		return &csi.ListVolumesResponse_Entry{Volume: d.csiVolume(lvs[byID[id]], nil)}
	})
	if err != nil {
		return nil, volumeError("", err)
	}
	return &csi.ListVolumesResponse{Entries: entries, NextToken: next}, nil
}
