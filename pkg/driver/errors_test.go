package driver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/volume"
)

// TestChainCodeUnavailable: a target that cannot be reached right now is
// Unavailable (retryable), not Internal (issue 14, item 4); the caller's
// own cancelled or expired context keeps its code.
func TestChainCodeUnavailable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		err  error
		want codes.Code
	}{
		{fmt.Errorf("delete: s3 GET %q: %w: %w", "k", store.ErrTransient, refused), codes.Unavailable},
		{fmt.Errorf("gave up after 6 attempts: %w", store.ErrTransient), codes.Unavailable},
		{fmt.Errorf("open: %w", refused), codes.Unavailable},
		{fmt.Errorf("read: %w", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}), codes.Unavailable},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), codes.Unavailable},
		{fmt.Errorf("%w (while retrying after: %w)", context.DeadlineExceeded, store.ErrTransient), codes.DeadlineExceeded},
		{context.Canceled, codes.Canceled},
		{fmt.Errorf("x: %w", store.ErrAccessDenied), codes.PermissionDenied},
		{fmt.Errorf("x: %w", s3chain.ErrBackupNotFound), codes.NotFound},
		{fmt.Errorf("x: %w", s3chain.ErrChainBusy), codes.Aborted},
		{errors.New("something else"), codes.Internal},
	} {
		if got := familyCode(tc.err); got != tc.want {
			t.Errorf("familyCode(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestErrorFamilies: the one mapping per RPC family turns sentinels into
// codes (a volume still being restored does not exist yet; a held name is
// Aborted; a snapshot id naming nothing is NotFound), keeps the message,
// and passes a status made earlier through unchanged.
func TestErrorFamilies(t *testing.T) {
	made := status.Error(codes.AlreadyExists, "volume x exists with other parameters")
	for _, tc := range []struct {
		name string
		err  error
		want codes.Code
	}{
		{"volume not ready", volumeError("volume v", volume.ErrNotReady), codes.NotFound},
		{"volume missing", volumeError("volume v", fmt.Errorf("get: %w", backend.ErrNotFound)), codes.NotFound},
		{"volume busy", volumeError("volume v", volume.ErrBusy), codes.Aborted},
		{"volume status", volumeError("volume v", made), codes.AlreadyExists},
		{"snapshot none", snapshotError("", fmt.Errorf("%w: group g", errNoSnapshot)), codes.NotFound},
		{"snapshot unreachable", snapshotError("open", fmt.Errorf("x: %w", store.ErrTransient)), codes.Unavailable},
		{"node not ready", nodeError("volume v", volume.ErrNotReady), codes.NotFound},
		{"node pool", nodeError("grow", backend.ErrNoSpace), codes.ResourceExhausted},
	} {
		if got := status.Code(tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if err := volumeError("", made); err != made {
		t.Errorf("a status was rewrapped: %v", err)
	}
	if msg := status.Convert(volumeError("volume v", volume.ErrBusy)).Message(); !strings.HasPrefix(msg, "volume v: ") {
		t.Errorf("message %q does not say what failed", msg)
	}
	if volumeError("x", nil) != nil {
		t.Error("nil error mapped to a status")
	}
}

// TestChainCodeTooLarge: a volume larger than its chain holds is
// FailedPrecondition (no retry fits it; a new chain does), though its
// sentinel wraps ErrInvalidOptions, which stays InvalidArgument (issue 24).
func TestChainCodeTooLarge(t *testing.T) {
	if got := familyCode(fmt.Errorf("backup: %w", s3chain.ErrVolumeTooLarge)); got != codes.FailedPrecondition {
		t.Errorf("ErrVolumeTooLarge: %v, want FailedPrecondition", got)
	}
	if got := familyCode(fmt.Errorf("x: %w: block size differs", s3chain.ErrInvalidOptions)); got != codes.InvalidArgument {
		t.Errorf("ErrInvalidOptions: %v, want InvalidArgument", got)
	}
}

// TestSnapshotErrorRetained: deleting a backup under Object Lock retention
// is FailedPrecondition (CSI: the snapshotter retries later), and the
// message keeps the date it can be deleted after.
func TestSnapshotErrorRetained(t *testing.T) {
	err := snapshotError("delete backup b", fmt.Errorf("%w: backup \"x\" of chain \"ns/a\" is locked (COMPLIANCE) until 2027-01-02T03:04:05Z", s3chain.ErrRetained))
	st := status.Convert(err)
	if st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), "2027-01-02T03:04:05Z") {
		t.Fatalf("got %v %q; want FailedPrecondition naming the date", st.Code(), st.Message())
	}
}

// TestNodeSentinelCodes: the node's sentinels (volume/node_errors.go) map
// to the codes the CSI spec's node tables give, whatever their cause wraps
// (a failed mkdir out of space stays Internal), and Mark keeps the message.
func TestNodeSentinelCodes(t *testing.T) {
	for _, tc := range []struct {
		sentinel error
		want     codes.Code
	}{
		{volume.ErrNodeFailed, codes.Internal},
		{volume.ErrNotStaged, codes.FailedPrecondition},
		{volume.ErrInUse, codes.FailedPrecondition},
		{volume.ErrIncompatible, codes.FailedPrecondition},
		{volume.ErrPoolNotReady, codes.FailedPrecondition},
		{volume.ErrMountConflict, codes.AlreadyExists},
		{volume.ErrRestoring, codes.Unavailable},
		{volume.ErrFrozen, codes.Aborted},
		{volume.ErrNotAtPath, codes.NotFound},
	} {
		err := volume.Mark(tc.sentinel, "create staging path /x: %w", syscall.ENOSPC)
		st := status.Convert(nodeError("", err))
		if st.Code() != tc.want || st.Message() != "create staging path /x: "+syscall.ENOSPC.Error() {
			t.Errorf("%v: %v %q, want %v and the message as made", tc.sentinel, st.Code(), st.Message(), tc.want)
		}
		if !errors.Is(err, tc.sentinel) || !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("%v: the mark hides its sentinel or its cause", tc.sentinel)
		}
	}
}
