package driver

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
