package driver

import (
	"sort"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// sortSnapshots orders snapshots by id, the pagination order.
func sortSnapshots(s []*csi.Snapshot) {
	sort.Slice(s, func(i, j int) bool { return s[i].SnapshotId < s[j].SnapshotId })
}
