package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
)

// TestBeforeSelector: chainvolctl resolves CHAIN@before:T (T in a -03:00
// zone) to the newest backup at or before T, inclusive of a backup created
// exactly at T; no backup before T exits 3 naming the chain and T.
func TestBeforeSelector(t *testing.T) {
	srv := testutil.StartS3(t)
	dir := t.TempDir()
	c := &ctl{t: t, secrets: []string{srv.SecretKey}}
	c.env = []string{"CHAINVOL_TARGETS=s3=" + srv.URL("sel"), "CHAINVOL_ACCESS_KEY_ID=" + srv.AccessKey,
		"CHAINVOL_SECRET_ACCESS_KEY=" + srv.SecretKey}
	g := []string{"--state-dir", filepath.Join(dir, "state")}
	img := makeImage(t, dir)
	c.ok(append(g, "backup", "create", "--from", img, "--chain", "lab/db", "--id", "one")...)
	time.Sleep(50 * time.Millisecond)
	between := time.Now().In(time.FixedZone("BRT", -3*3600)).Format(time.RFC3339Nano)
	time.Sleep(50 * time.Millisecond)
	c.ok(append(g, "backup", "create", "--from", img, "--chain", "lab/db", "--id", "two")...)

	show := func(sel string) backupJSON {
		return decode[backupJSON](t, c.ok(append(g, "backup", "show", "lab/db@"+sel, "-o", "json")...))
	}
	if b := show("before:" + between); b.ID != "one" {
		t.Errorf("before %s: %s, want one", between, b.ID)
	}
	if b := show("latest"); b.ID != "two" {
		t.Errorf("latest: %s", b.ID)
	}
	// Inclusive: T equal to a backup's own createdAt selects it.
	created := decode[struct {
		CreatedAt time.Time `json:"createdAt"`
	}](t, c.ok(append(g, "backup", "show", "lab/db@two", "-o", "json")...)).CreatedAt
	if created.IsZero() {
		t.Fatal("backup show -o json has no createdAt")
	}
	if b := show("before:" + created.In(time.FixedZone("x", 9*3600)).Format(time.RFC3339Nano)); b.ID != "two" {
		t.Errorf("before its own createdAt: %s, want two (inclusive)", b.ID)
	}
	e := c.fails(3, append(g, "backup", "show", "lab/db@before:2001-02-03T04:05:06+07:00")...)
	if !strings.Contains(e, "lab/db") || !strings.Contains(e, "2001-02-03T04:05:06+07:00") {
		t.Errorf("no backup before T: %s", e)
	}
	c.fails(2, append(g, "backup", "show", "lab/db@before:2001-02-03")...)
}
