package retention

import (
	"slices"
	"testing"
	"time"
	_ "time/tzdata" // America/New_York on any machine: the test never skips
)

// at parses a UTC time like 2026-11-29T10:15.
func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse("2006-01-02T15:04", s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// kept applies p to items named by their times and returns the kept ids,
// newest first.
func kept(t *testing.T, p Policy, times ...string) []string {
	t.Helper()
	var items []Item
	for _, s := range times {
		items = append(items, Item{ID: s, Time: at(t, s)})
	}
	var out []string
	for _, d := range Apply(items, p) {
		if d.Keep != (len(d.Reasons) > 0) {
			t.Fatalf("%s: keep %v with reasons %v", d.ID, d.Keep, d.Reasons)
		}
		if d.Keep {
			out = append(out, d.ID)
		}
	}
	return out
}

func TestApplyTable(t *testing.T) {
	// Hourly backups over two days and a gap of three days before them.
	var hourly []string
	for h := range 48 {
		hourly = append(hourly, time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC).Add(time.Duration(h)*time.Hour).Format("2006-01-02T15:04"))
	}
	gap := append([]string{"2026-11-24T23:00", "2026-11-24T12:00"}, hourly...)
	for _, c := range []struct {
		name  string
		p     Policy
		times []string
		want  []string
	}{
		{"last 3", Policy{Last: 3}, hourly, []string{"2026-11-29T23:00", "2026-11-29T22:00", "2026-11-29T21:00"}},
		{"daily 2 keeps the newest of each day", Policy{Daily: 2}, hourly, []string{"2026-11-29T23:00", "2026-11-28T23:00"}},
		{"daily 3 with counts left keeps the oldest too", Policy{Daily: 3}, hourly,
			[]string{"2026-11-29T23:00", "2026-11-28T23:00", "2026-11-28T00:00"}},
		{"daily across a gap counts days with backups", Policy{Daily: 3}, gap,
			[]string{"2026-11-29T23:00", "2026-11-28T23:00", "2026-11-24T23:00"}},
		{"within 3h of the newest, not of now", Policy{Within: 3 * time.Hour}, hourly,
			[]string{"2026-11-29T23:00", "2026-11-29T22:00", "2026-11-29T21:00"}},
		{"weekly: ISO weeks (Sunday 29 Nov ends week 48)", Policy{Weekly: 2}, append([]string{"2026-11-30T01:00"}, hourly...),
			[]string{"2026-11-30T01:00", "2026-11-29T23:00"}},
		{"monthly and yearly", Policy{Monthly: 2, Yearly: 3},
			[]string{"2027-01-02T00:00", "2026-12-31T23:00", "2026-12-01T00:00", "2026-11-30T00:00", "2025-06-01T00:00"},
			[]string{"2027-01-02T00:00", "2026-12-31T23:00", "2025-06-01T00:00"}},
		{"unlimited daily", Policy{Daily: Unlimited}, gap,
			[]string{"2026-11-29T23:00", "2026-11-28T23:00", "2026-11-24T23:00", "2026-11-24T12:00"}},
		{"rules combine", Policy{Last: 1, Hourly: 2, Daily: 2}, hourly,
			[]string{"2026-11-29T23:00", "2026-11-29T22:00", "2026-11-28T23:00"}},
	} {
		if got := kept(t, c.p, c.times...); !slices.Equal(got, c.want) {
			t.Errorf("%s: kept %v, want %v", c.name, got, c.want)
		}
	}
}

// Equal times: the greater id counts as newer, whatever the input order,
// and one bucket keeps one of them.
func TestApplyTies(t *testing.T) {
	ts := at(t, "2026-11-29T10:00")
	for _, order := range [][]string{{"a", "b", "c"}, {"c", "a", "b"}} {
		var items []Item
		for _, id := range order {
			items = append(items, Item{ID: id, Time: ts})
		}
		ds := Apply(items, Policy{Daily: 2})
		if ds[0].ID != "c" || !ds[0].Keep || ds[1].Keep || !ds[2].Keep {
			t.Fatalf("order %v: %+v; want c kept (newest), b forgotten, a kept (oldest, counts left)", order, ds)
		}
		ds = Apply(items, Policy{Last: 1})
		if ds[0].ID != "c" || !ds[0].Keep || ds[1].Keep || ds[2].Keep {
			t.Fatalf("order %v, last 1: %+v", order, ds)
		}
	}
}

// Time zones: buckets are UTC days, so a backup at 23:30 in New York on
// the day of a DST change (2026-11-01, EST from 02:00) is in the next UTC
// day, and the answer is the same whatever zone the times come in.
func TestApplyUTC(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	a := time.Date(2026, 11, 1, 23, 30, 0, 0, ny) // 2026-11-02T04:30Z
	b := time.Date(2026, 11, 1, 1, 30, 0, 0, ny)  // before the change: 05:30Z, UTC day 1 Nov
	c := time.Date(2026, 11, 2, 3, 0, 0, 0, ny)   // 08:00Z, UTC day 2 Nov
	items := []Item{{"a", a}, {"b", b}, {"c", c}}
	ds := Apply(items, Policy{Daily: 2})
	if ds[0].ID != "c" || !ds[0].Keep || ds[1].ID != "a" || ds[1].Keep || ds[0].Time.Location() != time.UTC {
		t.Fatalf("%+v; want c kept for UTC day 2 Nov, a (same UTC day) not", ds)
	}
	if !ds[2].Keep || ds[2].Reasons[0] != "daily 2026-11-01" {
		t.Fatalf("oldest kept as %v", ds[2].Reasons)
	}
}

func TestPolicyCheckAndEmpty(t *testing.T) {
	if err := (Policy{Daily: -2}).Check(); err == nil {
		t.Error("keep-daily -2 accepted")
	}
	if err := (Policy{Within: -time.Hour}).Check(); err == nil {
		t.Error("negative keep-within accepted")
	}
	ds := Apply([]Item{{"x", time.Now()}}, Policy{})
	if !(Policy{}).Empty() || !ds[0].Keep {
		t.Error("an empty policy must keep everything")
	}
	if s := (Policy{Last: 3, Within: 48 * time.Hour}).String(); s != "keep-last 3, keep-within 48h0m0s" {
		t.Errorf("String = %q", s)
	}
}
