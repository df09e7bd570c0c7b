package driver

import (
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/volume"
)

func TestParseVolumeParams(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params map[string]string
		code   codes.Code
	}{
		{"none", nil, codes.OK},
		{"fromBackup", map[string]string{"fromBackup": "a/b@latest", "backupTarget": "x"}, codes.OK},
		{"reserved keys ignored", map[string]string{"csi.storage.k8s.io/fstype": "xfs", paramPVCName: "n"}, codes.OK},
		{"unknown", map[string]string{"fromBakup": "a@latest"}, codes.InvalidArgument},
		{"restoreMode full", map[string]string{"fromBackup": "a/b@latest", "restoreMode": "full"}, codes.OK},
		{"restoreMode instant", map[string]string{"fromBackup": "a/b@latest", "restoreMode": "instant"}, codes.OK},
		{"restoreMode lazy", map[string]string{"fromBackup": "a/b@latest", "restoreMode": "lazy"}, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parseVolumeParams(tc.params)
			if status.Code(err) != tc.code {
				t.Fatalf("code %v, want %v (%v)", status.Code(err), tc.code, err)
			}
			if want := tc.params["restoreMode"] == "instant"; err == nil && p.Instant != want {
				t.Errorf("Instant %v, want %v", p.Instant, want)
			}
			if tc.name == "restoreMode lazy" && !strings.Contains(err.Error(), `"full" or "instant"`) {
				t.Errorf("error does not name the valid modes: %v", err)
			}
			if tc.name == "unknown" && !strings.Contains(err.Error(), "fromBackup, backupTarget, restoreMode") {
				t.Errorf("error does not list the valid keys: %v", err)
			}
		})
	}
}

func TestDigestIgnoresPVName(t *testing.T) {
	a := digestParams(map[string]string{"fromBackup": "c@latest", paramPVName: "pv-1"})
	b := digestParams(map[string]string{"fromBackup": "c@latest", paramPVName: "pv-2"})
	c := digestParams(map[string]string{"fromBackup": "d@latest", paramPVName: "pv-1"})
	if a != b || a == c {
		t.Fatalf("digests: %s %s %s", a, b, c)
	}
}

func TestParseSnapshotParams(t *testing.T) {
	for _, tc := range []struct {
		params map[string]string
		backup bool
		code   codes.Code
	}{
		{nil, false, codes.OK},
		{map[string]string{"backup": "true", "backupTarget": "offsite"}, true, codes.OK},
		{map[string]string{"backup": "false"}, false, codes.OK},
		{map[string]string{"backup": "yes"}, false, codes.InvalidArgument},
		{map[string]string{"backupTarget": "offsite"}, false, codes.InvalidArgument},
		{map[string]string{"csi.storage.k8s.io/snapshotter-secret-name": "s"}, false, codes.OK},
		{map[string]string{"other": "1"}, false, codes.InvalidArgument},
	} {
		p, err := parseSnapshotParams(tc.params)
		if status.Code(err) != tc.code || (err == nil && p.Backup != tc.backup) {
			t.Errorf("%v: got %+v, %v; want backup=%v code %v", tc.params, p, err, tc.backup, tc.code)
		}
	}
}

func TestSizeFor(t *testing.T) {
	for _, tc := range []struct {
		req, limit, min, want int64
		code                  codes.Code
	}{
		{0, 0, 0, volume.DefaultVolumeSize, codes.OK},
		{0, 1 << 20, 0, 1 << 20, codes.OK},
		{1000, 0, 0, 4096, codes.OK},
		{1 << 20, 0, 2 << 20, 2 << 20, codes.OK},
		{1 << 20, 1 << 20, 2 << 20, 0, codes.OutOfRange},
		{2 << 20, 1 << 20, 0, 0, codes.InvalidArgument},
		{-1, 0, 0, 0, codes.InvalidArgument},
	} {
		got, err := sizeFor(&csi.CapacityRange{RequiredBytes: tc.req, LimitBytes: tc.limit}, tc.min)
		if status.Code(err) != tc.code || got != tc.want {
			t.Errorf("sizeFor(%d,%d,min %d) = %d, %v; want %d, %v", tc.req, tc.limit, tc.min, got, err, tc.want, tc.code)
		}
	}
}

// TestRestoreParsedBeforeLock: a restore request's backup (fromBackup with
// its templates, its target) is parsed before the name's lock (issue 15):
// a malformed one is InvalidArgument at once, even while another call
// holds the name, where it used to be Aborted until the lock was free.
func TestRestoreParsedBeforeLock(t *testing.T) {
	e := newNodeEnv(t)
	if !e.d.locks.TryLock(volumeNameLock("pvc-held").key) {
		t.Fatal("lock")
	}
	for _, fromBackup := range []string{"no-backup-here", "nosuch:chain@latest", "${pvc.namespace}/${pvc.name}@latest"} {
		_, err := e.d.CreateVolume(e.ctx, &csi.CreateVolumeRequest{Name: "pvc-held",
			VolumeCapabilities: []*csi.VolumeCapability{mountCap("", snw)}, Parameters: map[string]string{ParamFromBackup: fromBackup}})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("fromBackup %q while the name is held: %v, want InvalidArgument", fromBackup, err)
		}
	}
}
