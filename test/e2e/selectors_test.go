package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// TestFromBackupBefore: two members of a StatefulSet (shop/data-db-0 and
// -1) are backed up in two rounds; one restore parameter set,
// "offsite:${pvc.namespace}/${pvc.name}@before:T" with T between the rounds
// written in a UTC-7 zone, brings back each member's first-round data. A
// member whose chain has no backup before T is NotFound naming chain and T.
func TestFromBackupBefore(t *testing.T) {
	s3 := startS3(t)
	n := startDriver(t, "node-a", s3.opts(s3.url("")))
	members := []string{"data-db-0", "data-db-1"}
	var vols []*csi.Volume
	var pubs []*published
	for i, m := range members {
		v := createVolume(t, n.Ctrl, fmt.Sprintf("pvc-b%d", i), volSize, mountCap("ext4"), pvcParams("shop", m))
		vols = append(vols, v)
		pubs = append(pubs, stagePublish(t, n.Node, v.GetVolumeId(), mountCap("ext4")))
	}
	round := func(r int) (ids, hashes []string) {
		for i, p := range pubs {
			writeTree(t, p.Path, uint64(10*r+i+1), 2*mib)
			hashes = append(hashes, fmt.Sprint(hashTree(t, p.Path)))
			ids = append(ids, backup(t, n.Ctrl, vols[i].GetVolumeId(), fmt.Sprintf("snap-r%d-%d", r, i), ""))
		}
		return ids, hashes
	}
	first, firstHashes := round(1)
	time.Sleep(1100 * time.Millisecond) // ids are per second
	between := time.Now().In(time.FixedZone("UTC-7", -7*3600)).Format(time.RFC3339Nano)
	time.Sleep(1100 * time.Millisecond)
	second, _ := round(2)
	for _, p := range pubs {
		unpublishUnstage(t, p)
	}
	if first[0] == second[0] {
		t.Fatalf("rounds made the same backup %s", first[0])
	}

	for i, m := range members {
		params := pvcParams("shop", m)
		params["fromBackup"] = "offsite:${pvc.namespace}/${pvc.name}@before:" + between
		v := restore(t, n.Ctrl, &csi.CreateVolumeRequest{Name: fmt.Sprintf("pvc-r%d", i),
			VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")},
			CapacityRange:      &csi.CapacityRange{RequiredBytes: volSize}, Parameters: params})
		if got, want := v.GetVolumeContext()["restoredFrom"], strings.TrimPrefix(first[i], "backup:"); got != want {
			t.Errorf("%s: restoredFrom %q, want the first round's %q", m, got, want)
		}
		rp := stagePublish(t, n.Node, v.GetVolumeId(), mountCap("ext4"))
		if got := fmt.Sprint(hashTree(t, rp.Path)); got != firstHashes[i] {
			t.Errorf("%s: restored data differ from the first round's", m)
		}
		unpublishUnstage(t, rp)
	}

	params := pvcParams("shop", "data-db-2")
	params["fromBackup"] = "offsite:${pvc.namespace}/${pvc.name}@before:" + between
	_, err := n.Ctrl.CreateVolume(rpcCtx(t), &csi.CreateVolumeRequest{Name: "pvc-r2",
		VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")},
		CapacityRange:      &csi.CapacityRange{RequiredBytes: volSize}, Parameters: params})
	wantCode(t, "a member with no backups", err, codes.NotFound, "shop/data-db-2")

	params = pvcParams("shop", "data-db-0")
	early := "2020-01-01T00:00:00+02:00"
	params["fromBackup"] = "offsite:${pvc.namespace}/${pvc.name}@before:" + early
	_, err = n.Ctrl.CreateVolume(rpcCtx(t), &csi.CreateVolumeRequest{Name: "pvc-r3",
		VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")},
		CapacityRange:      &csi.CapacityRange{RequiredBytes: volSize}, Parameters: params})
	wantCode(t, "no backup before T", err, codes.NotFound, "shop/data-db-0", early)

	params["fromBackup"] = "offsite:${pvc.namespace}/${pvc.name}@before:2020-01-01"
	_, err = n.Ctrl.CreateVolume(rpcCtx(t), &csi.CreateVolumeRequest{Name: "pvc-r4",
		VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")},
		CapacityRange:      &csi.CapacityRange{RequiredBytes: volSize}, Parameters: params})
	wantCode(t, "a date without time", err, codes.InvalidArgument, "RFC 3339")
}
