package main

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := percentile(ds, c.q).Value; got != c.want.Seconds() {
			t.Errorf("percentile(%v) = %v s, want %v", c.q, got, c.want)
		}
	}
	if got := percentile(nil, 0.5).Value; got != 0 {
		t.Errorf("percentile of nothing = %v, want 0", got)
	}
	if n := slower(ds, 90*time.Millisecond); n != 10 {
		t.Errorf("slower than 90 ms: %d, want 10", n)
	}
}

func TestParseOnly(t *testing.T) {
	only, err := parseOnly("instant")
	if err != nil || !only["instant"] || len(only) != 1 {
		t.Fatalf("parseOnly(instant) = %v, %v", only, err)
	}
	if only, err = parseOnly("localbase"); err != nil || !only["backups"] {
		t.Errorf("localbase needs the backups phase: %v, %v", only, err)
	}
	if _, err := parseOnly("instant,nope"); err == nil {
		t.Error("an unknown phase was accepted")
	}
	if only, err := parseOnly(""); err != nil || only != nil {
		t.Errorf(`parseOnly("") = %v, %v; want every phase (nil)`, only, err)
	}
}

func TestParseFetchStats(t *testing.T) {
	text := `# HELP chainvol_hydration_fetch_seconds Latency
chainvol_hydration_fetch_seconds_bucket{result="success",le="0.001"} 3
chainvol_hydration_fetch_seconds_sum{result="success"} 1.5
chainvol_hydration_fetch_seconds_count{result="success"} 10
chainvol_hydration_fetch_seconds_sum{result="failure"} 0.5
chainvol_hydration_fetch_seconds_count{result="failure"} 2
chainvol_restore_duration_seconds_count{result="success"} 99
`
	n, total := parseFetchStats(text)
	if n != 12 || total != 2*time.Second {
		t.Errorf("parseFetchStats = %d fetches, %v; want 12, 2s", n, total)
	}
}

func TestLogSpanIn(t *testing.T) {
	log := `I1203 10:00:00.000000   1 x.go:1] "restore started" volume="v1"
I1203 10:00:01.000000   1 x.go:1] "restore started" volume="v2"
I1203 10:00:02.500000   1 x.go:1] "hydration done" volume="v2"
I1203 10:00:03.250000   1 x.go:1] "hydration done" volume="v1"
`
	if d, ok := logSpanIn(log, `"v1"`, "restore started", "hydration done"); !ok || d != 3250*time.Millisecond {
		t.Errorf("v1: %v, %v; want 3.25s", d, ok)
	}
	if d, ok := logSpanIn(log, `"v2"`, "restore started", "hydration done"); !ok || d != 1500*time.Millisecond {
		t.Errorf("v2: %v, %v; want 1.5s", d, ok)
	}
	if _, ok := logSpanIn(log, `"v3"`, "restore started", "hydration done"); ok {
		t.Error("a volume not in the log has a span")
	}
}

// TestLinesOfRecordedRun recomputes the table of the recorded full run
// (bench/results/latest.json, made before the lines were split by phase)
// and expects the same rows, and no instant rows in a run without them.
func TestLinesOfRecordedRun(t *testing.T) {
	b, err := os.ReadFile("results/latest.json")
	if err != nil {
		t.Skip("no recorded run:", err)
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Lines) == 0 {
		t.Fatal("the recorded run has no lines")
	}
	got := lines(&r)
	if len(got) != len(r.Lines) {
		t.Fatalf("%d lines, the recorded run has %d", len(got), len(r.Lines))
	}
	for i := range got {
		if got[i].Name != r.Lines[i].Name || got[i].Chainvol != r.Lines[i].Chainvol || met(got[i].Met) != met(r.Lines[i].Met) {
			t.Errorf("line %d: %q %v %s, recorded %q %v %s", i, got[i].Name, got[i].Chainvol, met(got[i].Met),
				r.Lines[i].Name, r.Lines[i].Chainvol, met(r.Lines[i].Met))
		}
	}
	if n := len(lines(&Results{})); n != 0 {
		t.Errorf("an empty run has %d lines", n)
	}
}
