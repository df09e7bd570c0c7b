package volume

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/backupid"
)

// ref and id build the typed references the old labels below decode to,
// from their parts (not from the label text the codec reads).
func ref(tgt, chain, backup string) RecordedRef {
	return RefOf(backupid.Ref{Target: tgt, Chain: chain, Backup: backup})
}

func id(tgt, chain, backup string) RecordedID {
	return IDOf(backupid.Ref{Target: tgt, Chain: chain, Backup: backup})
}

// oldLabels are label sets as drivers before pkg/volume wrote them (the
// literal keys and values of pkg/driver/labels.go at c671707), with the
// record each must decode to.
var oldLabels = []struct {
	name   string
	labels map[string]string
	want   Record
}{
	{"empty volume", map[string]string{"accessType": "mount", "params": "0123456789abcdef", "fsType": "xfs",
		"pvcName": "data", "pvcNamespace": "shop", "pvName": "pvc-1"},
		Record{AccessType: AccessMount, ParamsDigest: "0123456789abcdef", FSType: "xfs", PVCName: "data", PVCNamespace: "shop", PVName: "pvc-1"}},
	{"restoring volume", map[string]string{"accessType": "block", "params": "fedcba9876543210", "state": "restoring",
		"restoreRef": "offsite:shop/data@20261129T101500Z", "restoredFrom": "offsite:shop/data@20261129T101500Z",
		"restoreAllocatedBytes": "1073741824"},
		Record{AccessType: AccessBlock, ParamsDigest: "fedcba9876543210", Phase: PhaseRestoring,
			RestoreRef: ref("offsite", "shop/data", "20261129T101500Z"), RestoredFrom: ref("offsite", "shop/data", "20261129T101500Z"), RestoreAllocBytes: 1 << 30}},
	{"restored volume", map[string]string{"accessType": "mount", "fsType": "ext4", "restoreRef": "default:c@b1", "restoredFrom": "default:c@b1"},
		Record{AccessType: AccessMount, FSType: "ext4", RestoreRef: ref("default", "c", "b1"), RestoredFrom: ref("default", "c", "b1")}},
	{"backup uploading", map[string]string{"fsType": "ext4", "accessType": "mount", "hidden": "true",
		"backupRef": "backup:offsite:shop/data@20261129T101500Z", "backupState": "uploading", "backupUnreported": "true",
		"backupBlockSize": "1048576"},
		Record{FSType: "ext4", AccessType: AccessMount, Hidden: true, BackupRef: id("offsite", "shop/data", "20261129T101500Z"),
			Upload: Uploading, Unreported: true, BlockSize: 1 << 20}},
	{"backup done", map[string]string{"hidden": "true", "backupRef": "backup:default:c@b2", "backupState": "done",
		"backupDoneAt": "20261130T000002.000000123Z"},
		Record{Hidden: true, BackupRef: id("default", "c", "b2"), Upload: Uploaded,
			UploadDoneAt: time.Date(2026, 11, 30, 0, 0, 2, 123, time.UTC)}},
	{"backup failed", map[string]string{"hidden": "true", "backupRef": "backup:default:c@b3", "backupState": "failed",
		"backupError": "put block: connection refused", "backupCode": "Unavailable", "backupUnreported": "true"},
		Record{Hidden: true, BackupRef: id("default", "c", "b3"), Upload: UploadFailed,
			UploadError: "put block: connection refused", UploadClass: ClassUnreachable, Unreported: true, legacyCode: "Unavailable"}},
	{"group member", map[string]string{"groupId": "g-20261129T101500Z-0a1b2c3d4e5f", "groupName": "snap-group-1", "groupMember": "shop/db",
		"restoredFrom": "default:c@b1"},
		Record{GroupID: "g-20261129T101500Z-0a1b2c3d4e5f", GroupName: "snap-group-1", GroupMember: "shop/db", RestoredFrom: ref("default", "c", "b1")}},
	{"plain snapshot of an old driver", map[string]string{}, Record{}},
}

// TestDecodeOldLabels: labels written by the drivers before the codec
// decode to the record they meant, and encode back to the same labels
// byte for byte (existing pools keep working).
func TestDecodeOldLabels(t *testing.T) {
	for _, tc := range oldLabels {
		got := Decode(tc.labels)
		if !got.UploadDoneAt.Equal(tc.want.UploadDoneAt) {
			t.Errorf("%s: done at %v, want %v", tc.name, got.UploadDoneAt, tc.want.UploadDoneAt)
		}
		got.UploadDoneAt, tc.want.UploadDoneAt = time.Time{}, time.Time{}
		if got != tc.want {
			t.Errorf("%s: decoded\n%+v, want\n%+v", tc.name, got, tc.want)
		}
		want := tc.labels
		if code := tc.labels["backupCode"]; code != "" { // a gRPC code name: encoded as its class
			want = maps.Clone(tc.labels)
			delete(want, "backupCode")
			want["backupErrorClass"] = string(legacyCodeClass(code))
		}
		if enc := Decode(tc.labels).Encode(); !maps.Equal(enc, want) {
			t.Errorf("%s: re-encoded to %v, want %v", tc.name, enc, want)
		}
	}
}

// TestRecordRoundTrip: every field survives Encode and Decode.
func TestRecordRoundTrip(t *testing.T) {
	r := Record{AccessType: AccessBlock, FSType: "xfs", RestoredFrom: ref("a", "b", "c"), Phase: PhaseRestoring, RestoreRef: ref("a", "b", "c"),
		RestoreAllocBytes: 4096, ParamsDigest: "d", PVCName: "n", PVCNamespace: "ns", PVName: "pv", Hidden: true,
		BackupRef: id("a", "b", "c"), Upload: UploadFailed, UploadError: "e", UploadClass: ClassBusy,
		UploadDoneAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Unreported: true, BlockSize: 65536,
		UploadFailedAt: time.Date(2026, 1, 2, 3, 4, 5, 7, time.UTC), GroupID: "g", GroupName: "gn", GroupMember: "m"}
	if got := Decode(r.Encode()); got != r {
		t.Errorf("round trip:\n%+v\nwant\n%+v", got, r)
	}
	if got := Decode(Record{}.Encode()); got != (Record{}) || len(Record{}.Encode()) != 0 {
		t.Errorf("zero record encodes to %v", Record{}.Encode())
	}
	// A time of another zone is kept as the same instant in UTC.
	local := Record{UploadDoneAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))}
	if got := Decode(local.Encode()); !got.UploadDoneAt.Equal(local.UploadDoneAt) {
		t.Errorf("done at %v, want %v", got.UploadDoneAt, local.UploadDoneAt)
	}
}

// TestDoneAtSortsAsText: backupDoneAt values sort as strings in time
// order (older drivers compared them so).
func TestDoneAtSortsAsText(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 0, 0, 1, 0, time.UTC)
	a := Record{UploadDoneAt: t0}.Encode()[labelBackupDoneAt]
	b := Record{UploadDoneAt: t0.Add(time.Nanosecond)}.Encode()[labelBackupDoneAt]
	c := Record{UploadDoneAt: t0.Add(time.Hour * 24 * 400)}.Encode()[labelBackupDoneAt]
	if !(a < b && b < c) || len(a) != len(c) {
		t.Errorf("%q %q %q do not sort in time order", a, b, c)
	}
}

// TestPatch: a patch sets what changed and deletes (empty value) what
// was cleared, nothing else.
func TestPatch(t *testing.T) {
	old := Record{Upload: UploadFailed, UploadError: "boom", UploadClass: ClassUnreachable, BackupRef: id("a", "b", "c"), Hidden: true}
	r := old
	r.Upload, r.UploadError, r.UploadClass, r.UploadDoneAt = Uploaded, "", "", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	want := map[string]string{"backupState": "done", "backupError": "", "backupErrorClass": "", "backupDoneAt": "20260101T000000.000000000Z"}
	if got := r.Patch(old); !maps.Equal(got, want) {
		t.Errorf("patch %v, want %v", got, want)
	}
	if got := old.Patch(old); len(got) != 0 {
		t.Errorf("patch of an unchanged record: %v", got)
	}
}

// TestPatchLegacyCode: the gRPC code an older driver recorded for a failed
// upload reads as its class, and the next patch replaces the code label by
// the class label, whatever else it changes.
func TestPatchLegacyCode(t *testing.T) {
	old := Decode(map[string]string{"backupRef": "backup:a:b@c", "backupState": "failed", "backupError": "boom",
		"backupCode": "ResourceExhausted"})
	if old.UploadClass != ClassNoSpace {
		t.Fatalf("class %q, want %q", old.UploadClass, ClassNoSpace)
	}
	r := old
	r.Upload = Uploading
	want := map[string]string{"backupState": "uploading", "backupCode": "", "backupErrorClass": "no-space"}
	if got := r.Patch(old); !maps.Equal(got, want) {
		t.Errorf("patch %v, want %v", got, want)
	}
}

// TestDecodeTypedRefs: the reference labels of today's drivers decode to
// their parts, a hashed chain staying "~HEX"; each re-encodes to its text.
func TestDecodeTypedRefs(t *testing.T) {
	hashed := "backup:offsite:~" + backupid.ChainHash("shop/data") + "@20261129T101500Z"
	r := Decode(map[string]string{"restoreRef": "offsite:shop/data@20261129T101500Z", "restoredFrom": "c@b1",
		"backupRef": hashed})
	if got, err := r.RestoreRef.Ref(); err != nil || got != (backupid.Ref{Target: "offsite", Chain: "shop/data", Backup: "20261129T101500Z"}) {
		t.Errorf("restoreRef: %+v, %v", got, err)
	}
	if got, err := r.RestoredFrom.Ref(); err != nil || got != (backupid.Ref{Chain: "c", Backup: "b1"}) {
		t.Errorf("restoredFrom (no target): %+v, %v", got, err)
	}
	got, err := r.BackupRef.Ref()
	if err != nil || got.Target != "offsite" || got.Backup != "20261129T101500Z" || !SameChain(got, "offsite", "shop/data") {
		t.Errorf("hashed backupRef: %+v, %v", got, err)
	}
	if r.BackupRef.String() != hashed || !r.IsBackup() || r.Encode()["backupRef"] != hashed {
		t.Errorf("hashed backupRef re-encodes as %q", r.BackupRef)
	}
	if (Record{}).IsBackup() || !Decode(nil).RestoredFrom.IsZero() {
		t.Error("no label must read as no reference")
	}
	if _, err := Decode(nil).RestoreRef.Ref(); !errors.Is(err, backupid.ErrBadRef) {
		t.Errorf("absent restoreRef: %v, want ErrBadRef", err)
	}
}

// TestDecodeBadRefs: a reference label that does not parse keeps today's
// behaviour: it counts as set (a restored volume is never formatted, a
// snapshot with it is a backup's), re-encodes byte for byte, survives a
// Patch of other fields, and its Ref returns the parser's error.
func TestDecodeBadRefs(t *testing.T) {
	labels := map[string]string{"restoredFrom": "test", "restoreRef": "offsite:shop/data", "backupRef": "backup:../../etc",
		"backupState": "done"}
	r := Decode(labels)
	if r.RestoredFrom.IsZero() || r.RestoreRef.IsZero() || !r.IsBackup() {
		t.Fatalf("a bad label must still count as set: %+v", r)
	}
	if enc := r.Encode(); !maps.Equal(enc, labels) {
		t.Errorf("re-encoded to %v, want %v", enc, labels)
	}
	for _, tc := range []struct {
		got  func() (backupid.Ref, error)
		want func() (backupid.Ref, error)
	}{
		{r.RestoredFrom.Ref, func() (backupid.Ref, error) { return backupid.ParseRef("test") }},
		{r.RestoreRef.Ref, func() (backupid.Ref, error) { return backupid.ParseRef("offsite:shop/data") }},
		{r.BackupRef.Ref, func() (backupid.Ref, error) { return backupid.Parse("backup:../../etc") }},
	} {
		_, err := tc.got()
		_, want := tc.want()
		if !errors.Is(err, backupid.ErrBadRef) || err.Error() != want.Error() {
			t.Errorf("error %v, want the parser's %v", err, want)
		}
	}
	next := r
	next.Upload, next.FSType = Uploading, "xfs"
	if p := next.Patch(r); !maps.Equal(p, map[string]string{"backupState": "uploading", "fsType": "xfs"}) {
		t.Errorf("patch %v touches the bad labels", p)
	}
	if Decode(labels) != r {
		t.Error("decoding twice must give equal records")
	}
}
