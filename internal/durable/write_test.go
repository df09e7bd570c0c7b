package durable

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileReplacesWithMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for _, s := range []string{"one", "two"} {
		if err := WriteFile(p, []byte(s), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if err != nil || string(got) != "two" || fi.Mode().Perm() != 0o640 {
		t.Fatalf("content %q mode %v (%v), want \"two\" 0640", got, fi.Mode(), err)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"f"}) {
		t.Fatalf("dir holds %v, want only f", names)
	}
}

func TestWriteWithFailedFillLeavesOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteWith(p, 0o600, func(w io.Writer) error {
		_, _ = w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want the fill's", err)
	}
	if got, _ := os.ReadFile(p); string(got) != "old" {
		t.Fatalf("path holds %q after a failed fill", got)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"f"}) {
		t.Fatalf("dir holds %v: the temporary file stayed", names)
	}
}

func TestCreateFileExists(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := CreateFile(p, []byte("first"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CreateFile(p, []byte("second"), 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second create: %v, want fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(p); string(got) != "first" {
		t.Fatalf("path holds %q", got)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"f"}) {
		t.Fatalf("dir holds %v: the temporary file stayed", names)
	}
}

func TestRenameNoReplaceExists(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, p := range []string{a, b} {
		if err := WriteFile(p, []byte(filepath.Base(p)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := RenameNoReplace(a, b); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("rename onto an existing file: %v, want fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(b); string(got) != "b" {
		t.Fatalf("b holds %q", got)
	}
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	if err := RenameNoReplace(a, b); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(b); string(got) != "a" {
		t.Fatalf("b holds %q", got)
	}
}

func TestMkdirAll(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, "x", "y", "z")
	for range 2 { // the second finds it
		if err := MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v %v", d, fi, err)
	}
	f := filepath.Join(root, "file")
	if err := WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(f, 0o700); err == nil {
		t.Fatal("MkdirAll over a file succeeded")
	}
}

func TestTempNames(t *testing.T) {
	for name, want := range map[string]string{
		".state.json~tmp123": "state.json",
		".a~tmp~tmp9":        "a~tmp",
		"state.json~tmp123":  "", // no dot
		".state.json~tmp":    "", // no digits
		".state.json~tmp12x": "",
		".~tmp1":             "",
		"state.json":         "",
	} {
		if base, ok := TempOf(name); base != want || ok != (want != "") {
			t.Errorf("TempOf(%q) = %q, %v; want %q", name, base, ok, want)
		}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "ckpt")
	for _, n := range []string{".ckpt~tmp1", ".ckpt~tmp22", ".other~tmp3", "ckpt"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.CreateTemp(dir, TempPattern("ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := RemoveTemps(p); err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{".other~tmp3", "ckpt"}) {
		t.Fatalf("after RemoveTemps: %v", names)
	}
}
