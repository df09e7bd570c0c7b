package backupid

import (
	"errors"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

func TestRoundTrip(t *testing.T) {
	long := strings.Repeat("n", 63) + "/" + strings.Repeat("p", 36)
	for _, r := range []target.Ref{
		{Target: "offsite", Chain: "shop/data-db-0", Backup: "20261129T101500Z"},
		{Target: "a-very-long-name", Chain: long, Backup: "20261129T101500Z-12"},
	} {
		id := Format(r)
		if len(id) > MaxLen || !Is(id) {
			t.Fatalf("id %q: %d bytes", id, len(id))
		}
		got, err := Parse(id)
		if err != nil || got.Target != r.Target || got.Backup != r.Backup || !Hashes(got.Chain, r.Chain) {
			t.Fatalf("Parse(%q) = %+v, %v", id, got, err)
		}
	}
	if Format(target.Ref{Target: "t", Chain: "a/b", Backup: "x"}) != "backup:t:a/b@x" {
		t.Fatal("short ids must stay readable")
	}
}

func TestParseRefuses(t *testing.T) {
	for _, id := range []string{
		"backup:../../etc",
		"backup:shop/db@1", // no target
		"backup:t:shop/db@before:2026-11-29T10:00:00Z", // a selector is not one backup
		"backup:t:shop/db@group:g1",
		"backup:t:~0123@before:2026-11-29T10:00:00Z",
		"backup:BAD:~0123@x",
		"snap-1",
	} {
		if r, err := Parse(id); !errors.Is(err, target.ErrBadRef) {
			t.Errorf("Parse(%q) = %+v, %v; want ErrBadRef", id, r, err)
		}
	}
}
