package target

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

func TestParseSelectors(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"shop/db@before:2026-11-29T10:15:00Z", true},
		{"offsite:shop/db@before:2026-11-29T11:15:00+01:00", true},
		{"offsite:shop/db@before:2026-11-29T11:15:00.5-08:00", true},
		{"shop/db@group:g-20261129T101500Z", true},
		{"shop/db@before:2026-11-29", false},          // a date is not a time
		{"shop/db@before:2026-11-29T10:15:00", false}, // no zone: ambiguous
		{"shop/db@before:", false},
		{"shop/db@group:", false},
		{"shop/db@group:../x", false},
		{"off:site:shop/db@latest", false},
	} {
		r, err := ParseRef(tc.in)
		if tc.ok != (err == nil) {
			t.Errorf("ParseRef(%q) = %+v, %v; want ok=%v", tc.in, r, err, tc.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrBadRef) || (strings.Contains(tc.in, "@before") && !strings.Contains(err.Error(), "RFC 3339 time like")) {
				t.Errorf("ParseRef(%q) error %v: want ErrBadRef naming the forms", tc.in, err)
			}
			continue
		}
		if r.String() != tc.in || r.Concrete() {
			t.Errorf("ParseRef(%q) = %+v (concrete %v): want it unchanged and a selector", tc.in, r, r.Concrete())
		}
	}
	r, _ := ParseRef("offsite:shop/db@before:2026-11-29T11:15:00+01:00")
	if r.Target != "offsite" || r.Chain != "shop/db" {
		t.Fatalf("target/chain of a before: ref: %+v", r)
	}
	if at, ok := r.Before(); !ok || !at.Equal(time.Date(2026, 11, 29, 10, 15, 0, 0, time.UTC)) {
		t.Fatalf("Before() = %v %v, want 10:15 UTC", at, ok)
	}
}

func manifest(id string, at time.Time, group string) *s3chain.Manifest {
	return &s3chain.Manifest{Chain: "shop/db", ID: id, CreatedAt: at, GroupID: group}
}

// TestPick: at-or-before is inclusive, compares instants whatever the zone
// T is written in, and breaks equal createdAt by id whatever the order.
func TestPick(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	ms := []*s3chain.Manifest{
		manifest("b", t0.Add(time.Hour), "g2"),
		manifest("a", t0, "g1"),
		manifest("c", t0.Add(time.Hour), ""),
		manifest("d", t0.Add(2*time.Hour), ""),
	}
	rev := []*s3chain.Manifest{ms[3], ms[2], ms[1], ms[0]}
	for _, tc := range []struct{ sel, want string }{
		{"before:2026-11-29T10:00:00Z", "a"},           // inclusive
		{"before:2026-11-29T11:00:00+01:00", "a"},      // same instant, other zone
		{"before:2026-11-29T10:59:59.999999999Z", "a"}, // just before the tie
		{"before:2026-11-29T11:00:00Z", "c"},           // tie b/c at T: the larger id
		{"before:2026-11-29T06:30:00-04:30", "c"},      // 11:00 UTC
		{"before:2026-11-30T00:00:00+09:00", "d"},      // 15:00 UTC
		{"group:g1", "a"},
		{"group:g2", "b"},
	} {
		r, err := ParseRef("shop/db@" + tc.sel)
		if err != nil {
			t.Fatal(err)
		}
		for _, list := range [][]*s3chain.Manifest{ms, rev} {
			m, err := pick(list, r)
			if err != nil || m.ID != tc.want {
				t.Errorf("%s: got %v %v, want %s", tc.sel, m, err, tc.want)
			}
		}
	}
	for _, sel := range []string{"before:2026-11-29T10:59:59+01:00", "group:nope"} {
		r, _ := ParseRef("shop/db@" + sel)
		_, err := pick(ms, r)
		if !errors.Is(err, s3chain.ErrBackupNotFound) || !strings.Contains(err.Error(), `"shop/db"`) ||
			!strings.Contains(err.Error(), sel[strings.Index(sel, ":")+1:]) {
			t.Errorf("%s: %v, want ErrBackupNotFound naming the chain and %s", sel, err, sel)
		}
	}
}

// TestSelectS3: three real backups on the S3 test server; before: times
// between them pick the earlier backup, "latest" and ids still work.
func TestSelectS3(t *testing.T) {
	s3 := testutil.StartS3(t)
	set, err := NewSet(nil, s3.URL("sel"), Secrets{AccessKeyID: s3.AccessKey, SecretAccessKey: s3.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	repo, err := set.Open(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "vol")
	var ids []string
	var between []time.Time
	for i := range 3 {
		if err := os.WriteFile(src, []byte(strings.Repeat(string(rune('a'+i)), 1<<20)), 0o600); err != nil {
			t.Fatal(err)
		}
		m, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: "shop/db", Source: src, SizeBytes: 1 << 20,
			BlockSize: 64 << 10, BackupID: "b" + string(rune('0'+i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
		time.Sleep(20 * time.Millisecond)
		between = append(between, time.Now())
		time.Sleep(20 * time.Millisecond)
	}
	zone := time.FixedZone("x", -7*3600)
	for i, at := range between {
		r, _ := ParseRef("shop/db@before:" + at.In(zone).Format(time.RFC3339Nano))
		m, err := Select(ctx, repo, r)
		if err != nil || m.ID != ids[i] {
			t.Errorf("before %v: %v %v, want %s", at, m, err, ids[i])
		}
	}
	for sel, want := range map[string]string{"latest": ids[2], ids[1]: ids[1]} {
		r, _ := ParseRef("shop/db@" + sel)
		if m, err := Select(ctx, repo, r); err != nil || m.ID != want {
			t.Errorf("%s: %v %v, want %s", sel, m, err, want)
		}
	}
	r, _ := ParseRef("shop/db@before:2000-01-01T00:00:00+05:00")
	if _, err := Select(ctx, repo, r); !errors.Is(err, s3chain.ErrBackupNotFound) || !strings.Contains(err.Error(), "2000-01-01T00:00:00+05:00") {
		t.Errorf("before the first backup: %v, want ErrBackupNotFound naming T", err)
	}
}
