package backend

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func testMalformedIDs(t *testing.T, dir string, p *FilePool) {
	ctx := context.Background()
	mustCreate(t, p, CreateOptions{Name: "keep", Kind: KindVolume, SizeBytes: 4096})
	// A file one level above the pool that a path traversal would hit.
	bait := filepath.Join(dir, "lvols", "..", "pool.db")
	before := fileSize(t, bait)
	bad := []string{
		"", "../../etc", "vol-../x", "vol-" + "../../../../etc/passwd",
		"../pool.db", "vol-0123456789abcdef0123/..", "vol-0123456789ABCDEF0123",
		"vol-0123456789abcdef012", "vol-0123456789abcdef01234", "disk-0123456789abcdef0123",
		"vol-0123456789abcdef0123\x00", " vol-0123456789abcdef0123", strings.Repeat("a", 100),
	}
	for _, id := range bad {
		if ValidID(id) {
			t.Fatalf("ValidID(%q) = true", id)
		}
		_, err := p.Get(ctx, id)
		wantErr(t, "Get "+id, err, ErrNotFound)
		wantErr(t, "Delete "+id, p.Delete(ctx, id), ErrNotFound)
		_, err = p.Resize(ctx, id, 1<<20)
		wantErr(t, "Resize "+id, err, ErrNotFound)
		_, err = p.SetLabels(ctx, id, map[string]string{"a": "b"})
		wantErr(t, "SetLabels "+id, err, ErrNotFound)
		_, err = p.DataPath(id)
		wantErr(t, "DataPath "+id, err, ErrNotFound)
		_, err = p.Create(ctx, CreateOptions{Name: "c", Kind: KindVolume, SourceID: id})
		if id != "" { // "" means "no source": that is ErrInvalid (size 0)
			wantErr(t, "Create from "+id, err, ErrNotFound)
		}
	}
	// A well-formed id that does not exist is just not found.
	_, err := p.Get(ctx, "snap-0123456789abcdef0123")
	wantErr(t, "Get unknown", err, ErrNotFound)
	if fileSize(t, bait) != before {
		t.Fatal("pool.db changed size")
	}
	if l, _ := p.List(ctx, ""); len(l) != 1 {
		t.Fatalf("%d lvols, want 1", len(l))
	}
}

func testCloneCopiesBytes(t *testing.T, dir string, p *FilePool) {
	const size = 16 << 20
	v := mustCreate(t, p, CreateOptions{Name: "v", Kind: KindVolume, SizeBytes: size})
	vPath, _ := p.DataPath(v.ID)
	// Data regions separated by holes, one ending the file.
	writeRandom(t, vPath, 0, 1<<20)
	writeRandom(t, vPath, 5<<20+123, 300_000)
	writeRandom(t, vPath, size-64<<10, 64<<10)
	vSHA := fileSHA(t, vPath, -1)

	s := mustCreate(t, p, CreateOptions{Name: "s", Kind: KindSnapshot, SourceID: v.ID})
	c := mustCreate(t, p, CreateOptions{Name: "c", Kind: KindVolume, SourceID: s.ID, SizeBytes: size + 1<<20 + 1})
	sPath, _ := p.DataPath(s.ID)
	cPath, _ := p.DataPath(c.ID)
	if c.SizeBytes != size+1<<20+4096 || fileSize(t, cPath) != c.SizeBytes {
		t.Fatalf("clone size %d, file %d; want %d", c.SizeBytes, fileSize(t, cPath), size+1<<20+4096)
	}
	if got := fileSHA(t, sPath, -1); got != vSHA {
		t.Fatalf("snapshot sha256 %s, source %s", got, vSHA)
	}
	if got := fileSHA(t, cPath, size); got != vSHA {
		t.Fatalf("clone sha256 %s, source %s", got, vSHA)
	}
	tail, _ := os.ReadFile(cPath)
	if !slices.Equal(tail[size:], make([]byte, len(tail)-size)) {
		t.Fatal("clone's grown tail is not zero")
	}
	// Copy-on-write: changing the source leaves snapshot and clone alone.
	writeRandom(t, vPath, 4096, 8192)
	if fileSHA(t, vPath, -1) == vSHA {
		t.Fatal("source unchanged by the write")
	}
	if fileSHA(t, sPath, -1) != vSHA || fileSHA(t, cPath, size) != vSHA {
		t.Fatal("snapshot or clone changed with the source")
	}
	// Holes stay holes: the copies use about as many blocks as the data.
	for _, path := range []string{sPath, cPath} {
		var st syscall.Stat_t
		if err := syscall.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		if used := st.Blocks * 512; !p.Reflink() && used > 4<<20 {
			t.Fatalf("%s uses %d bytes for ~1.4 MiB of data: not sparse", path, used)
		}
	}
}

func testResize(t *testing.T, dir string, p *FilePool) {
	ctx := context.Background()
	v := mustCreate(t, p, CreateOptions{Name: "v", Kind: KindVolume, SizeBytes: 1 << 20})
	path, _ := p.DataPath(v.ID)
	writeRandom(t, path, 0, 1<<20)
	sha := fileSHA(t, path, -1)
	got, err := p.Resize(ctx, v.ID, 3<<20+1)
	if err != nil || got.SizeBytes != 3<<20+4096 || fileSize(t, path) != got.SizeBytes {
		t.Fatalf("Resize = %+v, %v; file %d", got, err, fileSize(t, path))
	}
	if fileSHA(t, path, 1<<20) != sha || fileSHA(t, path, -1) == sha {
		t.Fatal("grow changed the existing data")
	}
	if got, err := p.Resize(ctx, v.ID, 4096); err != nil || got.SizeBytes != 3<<20+4096 || fileSize(t, path) != got.SizeBytes {
		t.Fatalf("shrink = %+v, %v: want a no-op", got, err)
	}
	c, _ := p.Capacity(ctx)
	_, err = p.Resize(ctx, v.ID, c.TotalBytes+1)
	wantErr(t, "Resize over the filesystem size", err, ErrNoSpace)
	_, err = p.Resize(ctx, v.ID, -5)
	wantErr(t, "Resize to a negative size", err, ErrInvalid)
	if got, _ := p.Get(ctx, v.ID); got.SizeBytes != 3<<20+4096 {
		t.Fatalf("size after failed resizes %d", got.SizeBytes)
	}
}

func testLabels(t *testing.T, dir string, p *FilePool) {
	ctx := context.Background()
	v := mustCreate(t, p, CreateOptions{Name: "v", Kind: KindVolume, SizeBytes: 4096,
		Labels: map[string]string{"fsType": "xfs", "pvc": "data", "empty": ""}})
	if !mapsEqual(v.Labels, map[string]string{"fsType": "xfs", "pvc": "data"}) {
		t.Fatalf("created labels %v", v.Labels)
	}
	got, err := p.SetLabels(ctx, v.ID, map[string]string{"pvc": "", "restore": "done"})
	want := map[string]string{"fsType": "xfs", "restore": "done"}
	if err != nil || !mapsEqual(got.Labels, want) {
		t.Fatalf("SetLabels = %v, %v; want %v", got.Labels, err, want)
	}
	if again, _ := p.Get(ctx, v.ID); !mapsEqual(again.Labels, want) {
		t.Fatalf("Get labels %v, want %v", again.Labels, want)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func testReopenKeepsData(t *testing.T, dir string, p *FilePool) {
	ctx := context.Background()
	v := mustCreate(t, p, CreateOptions{Name: "v", Kind: KindVolume, SizeBytes: 1 << 20, Labels: map[string]string{"a": "1"}})
	path, _ := p.DataPath(v.ID)
	writeRandom(t, path, 100, 5000)
	sha := fileSHA(t, path, -1)
	s := mustCreate(t, p, CreateOptions{Name: "s", Kind: KindSnapshot, SourceID: v.ID})
	before, _ := p.List(ctx, "")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p2 := openPool(t, dir)
	after, err := p2.List(ctx, "")
	if err != nil || len(after) != 2 {
		t.Fatalf("List after reopen: %d lvols, %v", len(after), err)
	}
	for i := range before {
		if a, b := after[i], before[i]; a.ID != b.ID || a.Name != b.Name || a.SizeBytes != b.SizeBytes ||
			a.SourceID != b.SourceID || !a.CreatedAt.Equal(b.CreatedAt) || !mapsEqual(a.Labels, b.Labels) {
			t.Fatalf("after reopen %+v, before %+v", a, b)
		}
	}
	sPath, _ := p2.DataPath(s.ID)
	if fileSHA(t, path, -1) != sha || fileSHA(t, sPath, -1) != sha {
		t.Fatal("data changed across reopen")
	}
	if again := mustCreate(t, p2, CreateOptions{Name: "v", Kind: KindVolume, SizeBytes: 1 << 20}); again.ID != v.ID {
		t.Fatal("name index lost across reopen")
	}
}

func testRemovesOrphans(t *testing.T, dir string, p *FilePool) {
	v := mustCreate(t, p, CreateOptions{Name: "v", Kind: KindVolume, SizeBytes: 4096})
	p.Close()
	orphans := []string{"lvols/vol-00000000000000000000.img", "lvols/junk", "tmp/vol-11111111111111111111.img", "tmp/reflink-probe-src"}
	for _, o := range orphans {
		if err := os.WriteFile(filepath.Join(dir, o), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Subdirectories are never removed (the pool does not own them).
	if err := os.Mkdir(filepath.Join(dir, "lvols", "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	p2 := openPool(t, dir)
	if got := dirNames(t, filepath.Join(dir, "lvols")); !slices.Equal(got, []string{"sub", v.ID + ".img"}) {
		t.Fatalf("lvols/ after reopen: %v", got)
	}
	if got := dirNames(t, filepath.Join(dir, "tmp")); len(got) != 0 {
		t.Fatalf("tmp/ after reopen: %v", got)
	}
	if _, err := p2.Get(context.Background(), v.ID); err != nil {
		t.Fatal(err)
	}
}
