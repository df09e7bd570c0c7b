package driver

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A token this driver did not issue is Aborted (CSI spec "ListVolumes"), a
// negative max_entries InvalidArgument, whichever family maps it; a token
// it issued resumes after the id it names.
func TestPageTokens(t *testing.T) {
	ids := []string{"a", "b", "c"}
	_, _, _, err := page(ids, 0, "elsewhere:b")
	for name, mapped := range map[string]error{"volume": volumeError("", err), "snapshot": snapshotError("", err)} {
		if got := status.Code(mapped); got != codes.Aborted {
			t.Errorf("%s family: foreign token is %v (%v), want Aborted", name, got, mapped)
		}
	}
	if _, _, _, err := page(ids, -1, ""); status.Code(volumeError("", err)) != codes.InvalidArgument {
		t.Errorf("negative max_entries: %v, want InvalidArgument", err)
	}
	start, end, next, err := page(ids, 1, "")
	if err != nil || start != 0 || end != 1 || next != tokenPrefix+"a" {
		t.Fatalf("first page: %d..%d next %q, %v", start, end, next, err)
	}
	if start, end, next, err = page(ids, 0, next); err != nil || start != 1 || end != 3 || next != "" {
		t.Errorf("rest: %d..%d next %q, %v", start, end, next, err)
	}
}
