//go:build restic

package retention

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestApplyMatchesRestic compares Apply with restic's own forget on the
// same backup times: restic 0.18.1 (bin/restic, `make bench-deps`) makes
// one snapshot per time in a scratch repository (TZ=UTC, so its buckets
// are UTC days too), then `forget --dry-run --json` with each policy; the
// kept times must be equal. Times are distinct (restic breaks ties in time
// by its own order, Apply by id). Run with
// `make bench-deps && go test -tags restic -run Restic ./pkg/retention/`.
func TestApplyMatchesRestic(t *testing.T) {
	bin, err := filepath.Abs("../../bin/restic")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: run make bench-deps", err)
	}
	dir := t.TempDir()
	env := append(os.Environ(), "RESTIC_REPOSITORY="+filepath.Join(dir, "repo"), "RESTIC_PASSWORD=x", "TZ=UTC",
		"RESTIC_CACHE_DIR="+filepath.Join(dir, "cache"))
	run := func(args ...string) []byte {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("restic %v: %v\n%s", args, err, out)
		}
		return out
	}
	run("init")
	data := filepath.Join(dir, "data")
	if err := os.WriteFile(data, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	times := backupTimes()
	for _, ts := range times {
		run("backup", "--quiet", "--time", ts.Format("2006-01-02 15:04:05"), data)
	}
	var items []Item
	for _, ts := range times {
		items = append(items, Item{ID: ts.Format(time.RFC3339), Time: ts})
	}
	for _, c := range []struct {
		flags []string
		p     Policy
	}{
		{[]string{"--keep-last", "5"}, Policy{Last: 5}},
		{[]string{"--keep-hourly", "10"}, Policy{Hourly: 10}},
		{[]string{"--keep-daily", "7"}, Policy{Daily: 7}},
		{[]string{"--keep-weekly", "4", "--keep-monthly", "6"}, Policy{Weekly: 4, Monthly: 6}},
		{[]string{"--keep-yearly", "3", "--keep-daily", "3"}, Policy{Yearly: 3, Daily: 3}},
		{[]string{"--keep-within", "3d"}, Policy{Within: 72 * time.Hour}},
		{[]string{"--keep-last", "2", "--keep-hourly", "24", "--keep-daily", "7", "--keep-weekly", "4", "--keep-monthly", "12"},
			Policy{Last: 2, Hourly: 24, Daily: 7, Weekly: 4, Monthly: 12}},
		{[]string{"--keep-daily", "unlimited"}, Policy{Daily: Unlimited}},
		{[]string{"--keep-monthly", "200"}, Policy{Monthly: 200}},
	} {
		var groups []struct {
			Keep []struct {
				Time time.Time `json:"time"`
			} `json:"keep"`
		}
		if err := json.Unmarshal(run(append([]string{"forget", "--dry-run", "--json"}, c.flags...)...), &groups); err != nil || len(groups) != 1 {
			t.Fatalf("%v: restic's JSON: %v (%d groups)", c.flags, err, len(groups))
		}
		var theirs, ours []string
		for _, k := range groups[0].Keep {
			theirs = append(theirs, k.Time.UTC().Format(time.RFC3339))
		}
		for _, d := range Apply(items, c.p) {
			if d.Keep {
				ours = append(ours, d.ID)
			}
		}
		slices.Sort(theirs)
		slices.Sort(ours)
		if !slices.Equal(theirs, ours) {
			t.Errorf("%v: restic keeps %d %v\nApply keeps %d %v", c.flags, len(theirs), theirs, len(ours), ours)
		} else {
			t.Logf("%s: both keep %d of %d", strings.Join(c.flags, " "), len(ours), len(items))
		}
	}
}

// backupTimes are 60 distinct UTC times (whole seconds): a dense run of
// hours, scattered days with gaps, month and year boundaries, and a
// Sunday/Monday ISO-week boundary.
func backupTimes() []time.Time {
	rng := rand.New(rand.NewPCG(30, 1))
	seen := map[time.Time]bool{}
	var out []time.Time
	add := func(t time.Time) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	base := time.Date(2026, 11, 29, 23, 59, 59, 0, time.UTC) // a Sunday
	for h := range 30 {
		add(base.Add(time.Duration(-h) * time.Hour))
	}
	add(base.Add(time.Second)) // Monday 00:00:00, the next ISO week
	add(time.Date(2025, 12, 31, 23, 59, 59, 0, time.UTC))
	add(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for len(out) < 60 {
		add(base.Add(-time.Duration(rng.Int64N(int64(500 * 24 * time.Hour)))).Truncate(time.Second))
	}
	return out
}
