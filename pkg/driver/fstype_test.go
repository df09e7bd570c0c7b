package driver

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// TestSettleFSType: the one fsType rule of CreateVolume for every content
// source (issue 14, item 8).
func TestSettleFSType(t *testing.T) {
	for _, tc := range []struct {
		req, src, want string
		code           codes.Code
	}{
		{"", "", "", codes.OK},
		{"ext4", "", "ext4", codes.OK},
		{"", "xfs", "xfs", codes.OK},
		{"xfs", "xfs", "xfs", codes.OK},
		{"ext4", "xfs", "", codes.InvalidArgument},
		{"xfs", "ext4", "", codes.InvalidArgument},
	} {
		got, err := settleFSType(tc.req, tc.src, "volume vol-1")
		if got != tc.want || status.Code(err) != tc.code {
			t.Errorf("settleFSType(%q, %q) = %q, %v; want %q, %v", tc.req, tc.src, got, err, tc.want, tc.code)
		}
		if err != nil {
			msg := status.Convert(err).Message()
			for _, w := range []string{tc.req, tc.src, "vol-1", "csi.storage.k8s.io/fstype"} {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not mention %q", msg, w)
				}
			}
		}
	}
}

// TestSameVolumeFSType: a volume that exists under the requested name with
// another filesystem than the request names is AlreadyExists (CSI spec
// "CreateVolume": incompatible capabilities), also for a clone whose
// source is gone; no fsType on either side is compatible.
func TestSameVolumeFSType(t *testing.T) {
	lv := func(fs string) backend.LVol {
		return backend.LVol{Name: "pvc-1", SizeBytes: 1 << 30, SourceID: "snap-1",
			Labels: volume.Record{AccessType: accessMount, FSType: fs}.Encode()}
	}
	for _, tc := range []struct {
		have, req string
		code      codes.Code
	}{
		{"ext4", "ext4", codes.OK},
		{"ext4", "", codes.OK},
		{"", "xfs", codes.OK},
		{"ext4", "xfs", codes.AlreadyExists},
	} {
		vr := volumeRequest{name: "pvc-1", access: accessMount, fsType: tc.req}
		if err := sameVolume(lv(tc.have), vr, "snap-1", nil); status.Code(err) != tc.code {
			t.Errorf("volume with %q, request %q: %v, want %v", tc.have, tc.req, err, tc.code)
		}
	}
}
