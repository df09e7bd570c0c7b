package jobrec

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/durable"
)

// A job's record appears at Start, follows Update (with a rate and an ETA
// once it has two reports), and goes at End; nil and "" publish nothing.
func TestPublisherLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "jobs")
	p := Start(dir, Record{Kind: KindRestore, What: "restore of t:c@b"})
	recs := mustList(t, dir, 1)
	if r := recs[0]; r.Kind != KindRestore || r.PID != os.Getpid() || r.ProcStart == 0 || r.Stale || r.Process == "" {
		t.Fatalf("record after Start = %+v", r)
	}
	p.Set("t:c@b", "/dev/x")
	p.Update(1<<20, 4<<20)
	time.Sleep(WriteEvery + 50*time.Millisecond)
	p.Update(2<<20, 4<<20)
	r := waitRecord(t, dir, func(r Listed) bool { return r.DoneBytes == 2<<20 })
	if r.DoneBytes != 2<<20 || r.TotalBytes != 4<<20 || r.Backup != "t:c@b" || r.Subject != "/dev/x" || r.Percent() != 50 {
		t.Fatalf("record after updates = %+v", r)
	}
	eta, ok := r.ETA()
	if r.BytesPerSecond <= 0 || !ok || eta <= 0 || eta > 10*time.Second {
		t.Fatalf("rate %v B/s, ETA %v (%v): want a rate near 1 MiB/s and an ETA near 2 s", r.BytesPerSecond, eta, ok)
	}
	p.SetWaiting("waiting for target")
	if r := mustList(t, dir, 1)[0]; r.Waiting != "waiting for target" {
		t.Fatalf("waiting = %q", r.Waiting)
	}
	p.End()
	mustList(t, dir, 0)
	p.Update(3<<20, 4<<20) // after End: no record again
	mustList(t, dir, 0)
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	var none *Publisher
	none.Update(1, 2)
	none.End()
	if Start("", Record{}) != nil {
		t.Fatal("Start with no directory published")
	}
}

// A record whose process is gone, or whose PID now belongs to another
// process, is stale; one of another PID namespace is unchecked. Sweep
// removes the stale ones, this program's of an earlier namespace and old
// temporary files, and keeps a live one and another program's unchecked.
func TestStaleAndSweep(t *testing.T) {
	dir := t.TempDir()
	live := Start(dir, Record{Kind: KindBackup})
	defer live.End()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	self, err := procStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]Record{
		"dead":   {ID: "dead", PID: cmd.Process.Pid, ProcStart: 1},
		"reused": {ID: "reused", PID: os.Getpid(), ProcStart: self + 1},
		"other":  {ID: "other", PID: cmd.Process.Pid, ProcStart: 1, PIDNamespace: "pid:[1]", Process: "chainvolctl"},
		"before": {ID: "before", PID: 1, ProcStart: 1, PIDNamespace: "pid:[1]", Process: filepath.Base(os.Args[0])},
	} {
		data, _ := json.Marshal(r)
		if err := os.WriteFile(filepath.Join(dir, name+".json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(dir, ".killed.json~tmp1") // a durable.WriteFile temporary
	if err := os.WriteFile(tmp, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Minute)
	_ = os.Chtimes(tmp, old, old)
	_ = os.WriteFile(filepath.Join(dir, "foreign.json"), []byte("not json"), 0o600)
	stale, unchecked := 0, 0
	for _, r := range mustList(t, dir, 5) {
		if r.Stale {
			stale++
		}
		if r.Unchecked {
			unchecked++
		}
	}
	if stale != 2 || unchecked != 2 {
		t.Fatalf("%d stale, %d unchecked records; want 2 (dead and reused), 2 (another PID namespace's)", stale, unchecked)
	}
	// Removed: dead, reused, before (this program's, from an earlier
	// namespace) and the temporary file; kept: live and other.
	if n, err := Sweep(dir); err != nil || n != 4 {
		t.Fatalf("Sweep = %d, %v; want 4 files removed", n, err)
	}
	for _, r := range mustList(t, dir, 2) {
		if r.Stale || r.Kind != KindBackup && !r.Unchecked {
			t.Fatalf("after Sweep: %+v, want the live backup and the unchecked record", r)
		}
	}
}

// waitRecord waits up to 5 s for the one record in dir to satisfy ok (the
// writer writes after Update returns) and returns it as last listed.
func waitRecord(t *testing.T, dir string, ok func(Listed) bool) Listed {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := mustList(t, dir, 1)[0]
		if ok(r) || time.Now().After(deadline) {
			return r
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Update never waits for a write: a restore calls it from every worker
// for every block, and an fsync can take seconds. With the record's write
// held, Updates (each one due) return, and End waits for the write and
// then removes the record.
func TestUpdateDoesNotWaitForWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "jobs")
	p := Start(dir, Record{Kind: KindRestore})
	held, release := make(chan struct{}, 1), make(chan struct{})
	writeFile = func(path string, data []byte, perm os.FileMode) error {
		held <- struct{}{}
		<-release
		return durable.WriteFile(path, data, perm)
	}
	t.Cleanup(func() { writeFile = durable.WriteFile })
	returned := make(chan struct{})
	go func() {
		for i := range 100 {
			p.mu.Lock()
			p.written = time.Time{} // every Update is due to write
			p.mu.Unlock()
			p.Update(int64(i), 100)
		}
		close(returned)
	}()
	<-held // the writer is inside a write
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("Update waited for the held write")
	}
	ended := make(chan struct{})
	go func() { p.End(); close(ended) }()
	select {
	case <-ended:
		t.Fatal("End returned while a write was still to finish: the write would recreate the record")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-ended
	mustList(t, dir, 0)
}

func mustList(t *testing.T, dir string, n int) []Listed {
	t.Helper()
	recs, err := List(dir)
	if err != nil || len(recs) != n {
		t.Fatalf("List = %+v, %v; want %d records", recs, err, n)
	}
	return recs
}
