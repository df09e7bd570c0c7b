package driver

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestPage: the token names the last id of the previous page, so an id
// deleted between two calls neither repeats nor skips an entry; a token
// this driver did not issue is Aborted (CSI spec "ListVolumes"), a
// negative max_entries InvalidArgument, whichever family maps them.
func TestPage(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e"}
	upper := func(id string) string { return strings.ToUpper(id) }
	got, next, err := page(ids, 2, "", upper)
	if err != nil || strings.Join(got, "") != "AB" || next != tokenPrefix+"b" {
		t.Fatalf("first page: %q %q %v", got, next, err)
	}
	// "c" was deleted between the calls: the next page still starts after "b".
	got, next, err = page([]string{"a", "b", "d", "e"}, 2, next, upper)
	if err != nil || strings.Join(got, "") != "DE" || next != "" {
		t.Fatalf("second page: %q %q %v", got, next, err)
	}
	if got, next, err = page(ids, 0, tokenPrefix+"b", upper); err != nil || strings.Join(got, "") != "CDE" || next != "" {
		t.Fatalf("no max_entries: %q %q %v", got, next, err)
	}
	_, _, err = page(ids, 0, "invalid-token", upper)
	for family, mapped := range map[string]error{"volume": volumeError("", err), "snapshot": snapshotError("", err)} {
		if status.Code(mapped) != codes.Aborted || !strings.Contains(mapped.Error(), "was not issued by this driver") {
			t.Errorf("%s family, invalid token: %v, want Aborted", family, mapped)
		}
	}
	if _, _, err := page(ids, -1, "", upper); status.Code(volumeError("", err)) != codes.InvalidArgument {
		t.Fatalf("negative max: %v", err)
	}
}
