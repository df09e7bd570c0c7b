package driver

import (
	"fmt"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/pkg/backend"
)

// TestRestoreSpaceCodes: a write that meets ENOSPC, like the pool's own
// ErrNoSpace, is ResourceExhausted whatever wraps it.
func TestRestoreSpaceCodes(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("restore: write block 3 to /pool/x.img: %w", syscall.ENOSPC),
		fmt.Errorf("room: %w", backend.ErrNoSpace),
	} {
		if c := familyCode(err); c != codes.ResourceExhausted {
			t.Errorf("familyCode(%v) = %v, want ResourceExhausted", err, c)
		}
	}
}
