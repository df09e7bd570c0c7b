package backend

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// suiteCase is one behaviour every FilePool must show, whatever filesystem
// holds it; runSuite runs all of them against fresh pool directories.
type suiteCase struct {
	name string
	run  func(t *testing.T, dir string, p *FilePool)
}

var suite = []suiteCase{
	{"CreateGetListDelete", testCreateGetListDelete},
	{"IdempotentCreate", testIdempotentCreate},
	{"InvalidRequests", testInvalidRequests},
	{"MalformedIDs", testMalformedIDs},
	{"CloneCopiesBytes", testCloneCopiesBytes},
	{"Resize", testResize},
	{"Labels", testLabels},
	{"ReopenKeepsData", testReopenKeepsData},
	{"RemovesOrphans", testRemovesOrphans},
	{"Concurrent", testConcurrent},
}

// runSuite runs every suite case on a fresh pool in a new directory under
// root, opened with opts.
func runSuite(t *testing.T, root string, opts ...Option) {
	for _, c := range suite {
		t.Run(c.name, func(t *testing.T) {
			dir, err := os.MkdirTemp(root, "pool-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			c.run(t, dir, openPool(t, dir, opts...))
		})
	}
}

// TestPool runs the suite on a plain temporary directory (no root needed;
// on the usual ext4 or tmpfs this exercises the full-copy fallback).
func TestPool(t *testing.T) { runSuite(t, t.TempDir()) }

func testCreateGetListDelete(t *testing.T, dir string, p *FilePool) {
	ctx := context.Background()
	v := mustCreate(t, p, CreateOptions{Name: "pvc-1", Kind: KindVolume, SizeBytes: 1 << 20})
	if !ValidID(v.ID) || v.ID[:4] != "vol-" || v.SizeBytes != 1<<20 || v.Kind != KindVolume || v.CreatedAt.IsZero() {
		t.Fatalf("created %+v", v)
	}
	s := mustCreate(t, p, CreateOptions{Name: "snap-1", Kind: KindSnapshot, SourceID: v.ID})
	if s.ID[:5] != "snap-" || s.SizeBytes != v.SizeBytes || s.SourceID != v.ID {
		t.Fatalf("snapshot %+v of %+v", s, v)
	}
	path, err := p.DataPath(v.ID)
	if err != nil || path != filepath.Join(dir, "lvols", v.ID+".img") || fileSize(t, path) != 1<<20 {
		t.Fatalf("DataPath = %q, %v", path, err)
	}
	if got, err := p.Get(ctx, v.ID); err != nil || got.Name != "pvc-1" {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if got, err := p.GetByName(ctx, KindSnapshot, "snap-1"); err != nil || got.ID != s.ID {
		t.Fatalf("GetByName = %+v, %v", got, err)
	}
	_, err = p.GetByName(ctx, KindVolume, "snap-1")
	wantErr(t, "GetByName of the other kind", err, ErrNotFound)
	mustCreate(t, p, CreateOptions{Name: "pvc-0", Kind: KindVolume, SizeBytes: 4096})
	for kind, want := range map[Kind]int{"": 3, KindVolume: 2, KindSnapshot: 1} {
		l, err := p.List(ctx, kind)
		if err != nil || len(l) != want || !slices.IsSortedFunc(l, func(a, b LVol) int { return strings.Compare(a.ID, b.ID) }) {
			t.Fatalf("List(%q) = %d lvols %v, want %d sorted", kind, len(l), err, want)
		}
	}
	if err := p.Delete(ctx, v.ID); err != nil {
		t.Fatal(err)
	}
	_, err = p.Get(ctx, v.ID)
	wantErr(t, "Get after Delete", err, ErrNotFound)
	wantErr(t, "second Delete", p.Delete(ctx, v.ID), ErrNotFound)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("data file after Delete: %v", err)
	}
	// The name is free again, and the snapshot survives its source.
	if v2 := mustCreate(t, p, CreateOptions{Name: "pvc-1", Kind: KindVolume, SizeBytes: 8192}); v2.ID == v.ID {
		t.Fatal("re-created lvol reuses the deleted id")
	}
	if _, err := p.Get(ctx, s.ID); err != nil {
		t.Fatalf("snapshot after source delete: %v", err)
	}
}

func testIdempotentCreate(t *testing.T, dir string, p *FilePool) {
	ctx := context.Background()
	v := mustCreate(t, p, CreateOptions{Name: "a", Kind: KindVolume, SizeBytes: 5000})
	if v.SizeBytes != 8192 {
		t.Fatalf("size %d, want 5000 rounded up to 8192", v.SizeBytes)
	}
	if again := mustCreate(t, p, CreateOptions{Name: "a", Kind: KindVolume, SizeBytes: 8000}); again.ID != v.ID {
		t.Fatalf("same request returned %s, want %s", again.ID, v.ID)
	}
	_, err := p.Create(ctx, CreateOptions{Name: "a", Kind: KindVolume, SizeBytes: 1 << 20})
	wantErr(t, "same name, other size", err, ErrExists)
	_, err = p.Create(ctx, CreateOptions{Name: "a", Kind: KindVolume, SourceID: v.ID})
	wantErr(t, "same name, other source", err, ErrExists)
	// Names are per kind: a snapshot may be called "a" too.
	s := mustCreate(t, p, CreateOptions{Name: "a", Kind: KindSnapshot, SourceID: v.ID})
	if again := mustCreate(t, p, CreateOptions{Name: "a", Kind: KindSnapshot, SourceID: v.ID}); again.ID != s.ID {
		t.Fatalf("same snapshot request returned %s, want %s", again.ID, s.ID)
	}
	if l, _ := p.List(ctx, ""); len(l) != 2 {
		t.Fatalf("List has %d lvols, want 2", len(l))
	}
}

func testInvalidRequests(t *testing.T, dir string, p *FilePool) {
	ctx := context.Background()
	v := mustCreate(t, p, CreateOptions{Name: "src", Kind: KindVolume, SizeBytes: 1 << 20})
	c, err := p.Capacity(ctx)
	if err != nil || c.TotalBytes <= 0 || c.AvailableBytes <= 0 || c.AvailableBytes > c.TotalBytes {
		t.Fatalf("Capacity = %+v, %v", c, err)
	}
	cases := []struct {
		o    CreateOptions
		want error
	}{
		{CreateOptions{Name: "x", Kind: "disk", SizeBytes: 4096}, ErrInvalid},
		{CreateOptions{Name: "", Kind: KindVolume, SizeBytes: 4096}, ErrInvalid},
		{CreateOptions{Name: string(make([]byte, 2000)), Kind: KindVolume, SizeBytes: 4096}, ErrInvalid},
		{CreateOptions{Name: "x", Kind: KindVolume}, ErrInvalid},
		{CreateOptions{Name: "x", Kind: KindVolume, SizeBytes: -1}, ErrInvalid},
		{CreateOptions{Name: "x", Kind: KindVolume, SizeBytes: 1<<63 - 1}, ErrInvalid},
		{CreateOptions{Name: "x", Kind: KindVolume, SourceID: v.ID, SizeBytes: 4096}, ErrInvalid},
		{CreateOptions{Name: "x", Kind: KindVolume, SourceID: "vol-00000000000000000000"}, ErrNotFound},
		{CreateOptions{Name: "x", Kind: KindVolume, SizeBytes: c.TotalBytes + 4096}, ErrNoSpace},
	}
	for _, tc := range cases {
		_, err := p.Create(ctx, tc.o)
		wantErr(t, "Create "+tc.o.Name+" "+string(tc.o.Kind), err, tc.want)
	}
	_, err = p.List(ctx, "disk")
	wantErr(t, "List of unknown kind", err, ErrInvalid)
	if l, _ := p.List(ctx, ""); len(l) != 1 {
		t.Fatalf("failed creates left %d lvols, want 1", len(l))
	}
	assertClean(t, dir, p)
}

// assertClean checks that lvols/ holds exactly the data files of the listed
// lvols and that tmp/ is empty.
func assertClean(t *testing.T, dir string, p *FilePool) {
	t.Helper()
	l, err := p.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, v := range l {
		want = append(want, v.ID+".img")
	}
	if got := dirNames(t, filepath.Join(dir, "lvols")); !slices.Equal(got, want) {
		t.Fatalf("lvols/ holds %v, want %v", got, want)
	}
	if got := dirNames(t, filepath.Join(dir, "tmp")); len(got) != 0 {
		t.Fatalf("tmp/ holds %v", got)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func testConcurrent(t *testing.T, dir string, p *FilePool) {
	ctx := context.Background()
	src := mustCreate(t, p, CreateOptions{Name: "src", Kind: KindVolume, SizeBytes: 1 << 20})
	var wg sync.WaitGroup
	ids := make([]string, 16)
	for i := range 16 {
		wg.Go(func() {
			// Pairs of goroutines race on the same name: both must get one id.
			o := CreateOptions{Name: "n" + string(rune('a'+i/2)), Kind: KindSnapshot, SourceID: src.ID}
			v, err := p.Create(ctx, o)
			if err != nil {
				t.Errorf("Create %s: %v", o.Name, err)
				return
			}
			ids[i] = v.ID
			if _, err := p.SetLabels(ctx, v.ID, map[string]string{"k": o.Name}); err != nil {
				t.Errorf("SetLabels: %v", err)
			}
			if _, err := p.Resize(ctx, src.ID, int64(2+i)<<20); err != nil {
				t.Errorf("Resize: %v", err)
			}
		})
	}
	wg.Wait()
	for i := 0; i < 16; i += 2 {
		if ids[i] != ids[i+1] {
			t.Fatalf("same-name creates returned %s and %s", ids[i], ids[i+1])
		}
	}
	if got, _ := p.Get(ctx, src.ID); got.SizeBytes != 17<<20 {
		t.Fatalf("source size %d after concurrent resizes, want %d", got.SizeBytes, 17<<20)
	}
	for i := 0; i < 16; i += 2 {
		wg.Go(func() {
			if err := p.Delete(ctx, ids[i]); err != nil {
				t.Errorf("Delete: %v", err)
			}
		})
	}
	wg.Wait()
	if l, _ := p.List(ctx, ""); len(l) != 1 {
		t.Fatalf("%d lvols left, want 1", len(l))
	}
	assertClean(t, dir, p)
}
