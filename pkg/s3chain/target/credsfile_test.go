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
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// secretVolume is a directory laid out as kubelet lays out a Secret
// volume: KEY -> ..data/KEY, ..data -> ..VERSION, updated by writing a new
// ..VERSION and renaming a fresh symlink over ..data (atomic).
type secretVolume struct {
	t       *testing.T
	dir     string
	version int
}

func newSecretVolume(t *testing.T, content string) *secretVolume {
	v := &secretVolume{t: t, dir: t.TempDir()}
	v.update(content)
	if err := os.Symlink(filepath.Join("..data", "creds"), v.path()); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v *secretVolume) path() string { return filepath.Join(v.dir, "creds") }

// update publishes content as a new version, as kubelet's AtomicWriter does.
func (v *secretVolume) update(content string) {
	v.t.Helper()
	v.version++
	ver := "..2026_11_30_00_00_0" + string(rune('0'+v.version))
	if err := os.Mkdir(filepath.Join(v.dir, ver), 0o700); err != nil {
		v.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v.dir, ver, "creds"), []byte(content), 0o600); err != nil {
		v.t.Fatal(err)
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(ver, tmp); err != nil {
		v.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		v.t.Fatal(err)
	}
}

func credsFor(ak, sk string) string { return "accessKeyID=" + ak + "\nsecretAccessKey=" + sk + "\n" }

// TestCredentialsFileReread: a Set reads its credentials file again after
// kubelet's atomic update, and a changed file with the same identity only
// when forced (issue 14, item 9).
func TestCredentialsFileReread(t *testing.T) {
	v := newSecretVolume(t, credsFor("AK1", "SK1"))
	s, err := NewSet(nil, "file://"+t.TempDir(), Secrets{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UseCredentialsFile(v.path()); err != nil {
		t.Fatal(err)
	}
	if sec, err := s.fileSecrets(false); err != nil || sec.AccessKeyID != "AK1" {
		t.Fatalf("first read: %v %v", sec.AccessKeyID, err)
	}
	v.update(credsFor("AK2", "SK2"))
	if sec, err := s.fileSecrets(false); err != nil || sec.AccessKeyID != "AK2" || sec.SecretAccessKey != "SK2" {
		t.Fatalf("after kubelet's update: %v %v, want AK2", sec.AccessKeyID, err)
	}

	// An in-place rewrite of the same size that keeps the modification
	// time looks unchanged; only a forced read sees it.
	real := filepath.Join(v.dir, "..data", "creds")
	fi, _ := os.Stat(real)
	if err := os.WriteFile(real, []byte(credsFor("AK3", "SK3")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(real, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if sec, _ := s.fileSecrets(false); sec.AccessKeyID != "AK2" {
		t.Fatalf("unforced read of an unchanged identity: %v, want the cached AK2", sec.AccessKeyID)
	}
	if sec, _ := s.fileSecrets(true); sec.AccessKeyID != "AK3" {
		t.Fatalf("forced read: %v, want AK3", sec.AccessKeyID)
	}

	// A broken file is an error naming the line, never the old keys.
	v.update("garbage\n")
	if _, err := s.Open(context.Background(), "", nil); !errors.Is(err, ErrBadSecret) || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("Open with a broken file: %v, want ErrBadSecret", err)
	}
	if err := s.UseCredentialsFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing credentials file was accepted")
	}
}

// TestCredentialsRotationS3: against a real S3 server, a wrong key in the
// file is ErrAccessDenied; after kubelet's atomic update with the right
// key the next Open succeeds without a restart; and an update the file's
// identity does not show is picked up by the re-read before an
// access-denied becomes final (issue 14, item 9).
func TestCredentialsRotationS3(t *testing.T) {
	srv := testutil.StartS3(t)
	wrong := strings.Repeat("x", len(srv.SecretKey))
	v := newSecretVolume(t, credsFor(srv.AccessKey, wrong))
	s, err := NewSet([]string{"s3=" + srv.URL("t")}, "", Secrets{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UseCredentialsFile(v.path()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.Open(ctx, "s3", nil); !errors.Is(err, store.ErrAccessDenied) {
		t.Fatalf("Open with a wrong secret key: %v, want ErrAccessDenied", err)
	}
	v.update(credsFor(srv.AccessKey, srv.SecretKey))
	if _, err := s.Open(ctx, "s3", nil); err != nil {
		t.Fatalf("Open after the key was rotated in the file: %v", err)
	}

	// Back to the wrong key, written in place with the old identity: the
	// cached (right) key still opens; then the right key in place again,
	// identity kept, while the cache holds the wrong one.
	real := filepath.Join(v.dir, "..data", "creds")
	fi, _ := os.Stat(real)
	rewrite := func(content string) {
		if err := os.WriteFile(real, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(real, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(credsFor(srv.AccessKey, wrong))
	if _, err := s.fileSecrets(true); err != nil {
		t.Fatal(err)
	}
	rewrite(credsFor(srv.AccessKey, srv.SecretKey))
	if _, err := s.Open(ctx, "s3", nil); err != nil {
		t.Fatalf("Open when only a re-read shows the right key: %v", err)
	}
	if _, err := s.Open(ctx, "s3", map[string]string{KeyAccessKeyID: srv.AccessKey, KeySecretAccessKey: wrong}); !errors.Is(err, store.ErrAccessDenied) {
		t.Fatalf("Open with a request's wrong key: %v, want ErrAccessDenied", err)
	}
}
