package driver

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/volume"
)

// TestGroupSnapshotIDInjective: group names that differ only in case,
// separators or a suffix, and thousands of random ones, taken in one
// second, get distinct ids that are valid backup ids; member lvol names
// of distinct groups and members never meet.
func TestGroupSnapshotIDInjective(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 15, 0, 0, time.UTC)
	names := []string{"g", "G", "g-1", "g_1", "g.1", "g-1-0", "groupsnapshot-0", "groupsnapshot-0-1", "", strings.Repeat("x", 300)}
	r := rand.New(rand.NewPCG(24, 5))
	const folded = "gG01_-./ "
	for range 20000 {
		b := make([]byte, 1+r.IntN(12))
		for i := range b {
			b[i] = folded[r.IntN(len(folded))]
		}
		names = append(names, string(b))
	}
	ids, members := map[string]string{}, map[string]string{}
	for _, n := range names {
		id := groupSnapshotID(n, at)
		if err := s3chain.ValidBackupID(id); err != nil {
			t.Fatalf("groupSnapshotID(%q) = %q: %v", n, id, err)
		}
		if o, ok := ids[id]; ok && o != n {
			t.Fatalf("groups %q and %q share id %q", o, n, id)
		}
		ids[id] = n
		for i := range 12 {
			m, in := memberName(n, i), fmt.Sprintf("%q#%d", n, i)
			if o, ok := members[m]; ok && o != in {
				t.Fatalf("members %s and %s share the lvol name %q", o, in, m)
			}
			members[m] = in
		}
	}
}

// TestGroupAndSnapshotNamesApart: single and group snapshots share the
// pool's snapshot names (a group's members are GROUP-N). A group whose
// member name a snapshot holds is refused and leaves that snapshot alone;
// a CreateSnapshot of a member's name is refused rather than answered
// with the member.
func TestGroupAndSnapshotNamesApart(t *testing.T) {
	e := newNodeEnv(t)
	v0, v1 := e.volume("v0", nil), e.volume("v1", nil)
	ids := slices.Sorted(slices.Values([]string{v0.ID, v1.ID}))
	// grp-1 of member 1's own source: the pool would answer it as that member.
	if _, err := e.d.CreateSnapshot(e.ctx, &csi.CreateSnapshotRequest{Name: "grp-1", SourceVolumeId: ids[1]}); err != nil {
		t.Fatal(err)
	}
	_, err := e.d.groups.CreateVolumeGroupSnapshot(e.ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "grp", SourceVolumeIds: ids})
	if status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), `"grp-1"`) {
		t.Fatalf("group over a snapshot's name: %v", err)
	}
	if s, err := e.pool.GetByName(e.ctx, backend.KindSnapshot, "grp-1"); err != nil || volume.Of(s).GroupName != "" {
		t.Fatalf("the snapshot grp-1 after the refused group: %+v, %v", s, err)
	}
	g, err := e.d.groups.CreateVolumeGroupSnapshot(e.ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "team", SourceVolumeIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range g.GetGroupSnapshot().GetSnapshots() {
		lv, err := e.pool.Get(e.ctx, m.GetSnapshotId())
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.d.CreateSnapshot(e.ctx, &csi.CreateSnapshotRequest{Name: lv.Name, SourceVolumeId: lv.SourceID})
		if status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), `group snapshot "team"`) {
			t.Errorf("CreateSnapshot %q, the name of a member of team: %v", lv.Name, err)
		}
	}
}
