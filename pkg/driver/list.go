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
// pagination). The token names the last id of the previous page, so
// deletions between calls neither repeat nor skip entries. A token this
// driver did not issue is Aborted, as the spec asks (volume.ClassBusy:
// the CO starts the listing again); the caller maps it.
func page(ids []string, maxEntries int32, token string) (start, end int, next string, err error) {
	if maxEntries < 0 {
		return 0, 0, "", status.Error(codes.InvalidArgument, "max_entries must not be negative")
	}
	after, ok := strings.CutPrefix(token, tokenPrefix)
	if token != "" && !ok {
		return 0, 0, "", volume.Refuse(volume.ClassBusy, "starting_token %q was not issued by this driver", token)
	}
	start = sort.SearchStrings(ids, after)
	if after != "" && start < len(ids) && ids[start] == after {
		start++
	}
	end = len(ids)
	if maxEntries > 0 && start+int(maxEntries) < end {
		end = start + int(maxEntries)
		next = tokenPrefix + ids[end-1]
	}
	return start, end, next, nil
}

// ListVolumes lists ready volumes of the local pool (CSI spec "ListVolumes").
func (d *controller) ListVolumes(ctx context.Context, req *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	lvs, err := d.pool.List(ctx, "volume")
	if err != nil {
		return nil, volumeError("list lvols", err)
	}
	ids := make([]string, 0, len(lvs))
	for _, lv := range lvs {
		if volume.Of(lv).Ready() {
			ids = append(ids, lv.ID)
		}
	}
	start, end, next, err := page(ids, req.GetMaxEntries(), req.GetStartingToken())
	if err != nil {
		return nil, volumeError("", err)
	}
	resp := &csi.ListVolumesResponse{NextToken: next}
	byID := map[string]int{}
	for i, lv := range lvs {
		byID[lv.ID] = i
	}
	for _, id := range ids[start:end] {
		resp.Entries = append(resp.Entries, &csi.ListVolumesResponse_Entry{Volume: d.csiVolume(lvs[byID[id]], nil)})
	}
	return resp, nil
}
