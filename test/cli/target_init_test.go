package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
)

// TestTargetInit: "target init" makes a missing bucket on the real
// versitygw and checks it; run again it creates nothing; keys that may not
// create buckets (versitygw's role "user") exit 1 saying what to do; a
// backup then works.
func TestTargetInit(t *testing.T) {
	srv := testutil.StartS3WithUsers(t)
	srv.AddUser(t, "scoped", "not-the-secret-123", "user")
	dir := t.TempDir()
	bucket := srv.Bucket + "-init"
	url := strings.Replace(srv.URL("lab"), srv.Bucket, bucket, 1)
	c := &ctl{t: t, secrets: []string{srv.SecretKey}, env: []string{"CHAINVOL_TARGETS=lab=" + url,
		"CHAINVOL_ACCESS_KEY_ID=" + srv.AccessKey, "CHAINVOL_SECRET_ACCESS_KEY=" + srv.SecretKey}}
	g := []string{"--state-dir", filepath.Join(dir, "state")}

	bad := &ctl{t: t, secrets: []string{"not-the-secret-123"}, env: []string{"CHAINVOL_TARGETS=lab=" + url,
		"CHAINVOL_ACCESS_KEY_ID=scoped", "CHAINVOL_SECRET_ACCESS_KEY=not-the-secret-123"}}
	if e := bad.fails(1, append(g, "target", "init")...); !strings.Contains(e, "may not create it") || !strings.Contains(e, "target check lab") {
		t.Errorf("init with refused credentials does not say what to do: %s", e)
	}
	if r := c.run(append(g, "target", "check")...); r.code != 1 || !strings.Contains(r.stdout, "target init") {
		t.Errorf("check of a missing bucket: exit %d, want 1 and a hint naming target init:\n%s", r.code, r.stdout)
	}
	for _, want := range []bool{true, false} {
		r := decode[struct {
			Name      string `json:"name"`
			Created   bool   `json:"created"`
			Writable  bool   `json:"writable"`
			Condition bool   `json:"conditionalWrites"`
		}](t, c.ok(append(g, "target", "init", "lab", "-o", "json")...))
		if r.Name != "lab" || r.Created != want || !r.Writable || !r.Condition {
			t.Fatalf("target init = %+v, want created=%v, writable, conditional writes", r, want)
		}
	}
	if out := c.ok(append(g, "target", "init")...); !strings.Contains(out, "bucket exists already") {
		t.Errorf("target init of an existing bucket:\n%s", out)
	}
	c.fails(2, append(g, "target", "init", "nope")...)
	img := makeImage(t, dir)
	c.ok(append(g, "backup", "create", "--from", img, "--chain", "lab/x")...)
	if out := c.ok(append(g, "backup", "verify", "lab/x@latest")...); !strings.HasPrefix(out, "OK:") {
		t.Errorf("verify after init:\n%s", out)
	}
}
