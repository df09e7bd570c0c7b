package driver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
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
		if got := chainCode(tc.err); got != tc.want {
			t.Errorf("chainCode(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
