package cli

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
)

// TestBackupServe (issue 27): "backup serve" of an ext4 backup answers
// with the printed token only, over the self-signed certificate whose
// fingerprint it printed: a directory page, a download and a Range equal
// to the source, a directory as tar; it exits by itself after --idle
// without requests, leaving nothing mounted or attached.
func TestBackupServe(t *testing.T) {
	testutil.RequireFUSE(t)
	e := newRestoreEnv(t)
	sv := e.startServe(t, "s3:lab/x@latest")
	cmd, stdout, stderr, get, token := sv.cmd, &sv.stdout, &sv.stderr, sv.get, sv.token
	if code, _ := get("/sub/", "wrong", ""); code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d, want 401", code)
	}
	if code, page := get("/sub/", token, ""); code != 200 || !strings.Contains(string(page), `href="./filea"`) {
		t.Errorf("directory page: %d %s", code, page)
	}
	src, err := os.ReadFile(filepath.Join(e.dir, "content", "sub", "filea"))
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get("/sub/filea", token, ""); code != 200 || !bytes.Equal(body, src) {
		t.Errorf("download: %d, %d bytes, equal %v", code, len(body), bytes.Equal(body, src))
	}
	if code, body := get("/sub/filea", token, "bytes=1048000-1049999"); code != http.StatusPartialContent || !bytes.Equal(body, src[1048000:1050000]) {
		t.Errorf("range: %d, %d bytes", code, len(body))
	}
	code, body := get("/sub/?format=tar", token, "")
	tr, files := tar.NewReader(bytes.NewReader(body)), map[string]string{}
	for {
		hdr, err := tr.Next()
		if err != nil {
			if err != io.EOF {
				t.Fatalf("tar (%d): %v", code, err)
			}
			break
		}
		data, _ := io.ReadAll(tr)
		sum := sha256.Sum256(data)
		files[hdr.Name] = hex.EncodeToString(sum[:])
	}
	for _, f := range []string{"filea", "fileb", "filec", "filed"} {
		if want := sha(t, filepath.Join(e.dir, "content", "sub", f)); files["sub/"+f] != want {
			t.Errorf("tar: sub/%s sha256 %s, want %s (entries %v)", f, files["sub/"+f], want, len(files))
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v: %s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve still running 30 s after its last request with --idle 3s")
	}
	res := decode[mountOut](t, stdout.String())
	if res.FetchedBlocks == 0 || res.FetchedBlocks >= res.DataBlocks {
		t.Errorf("result %+v", res)
	}
	checkNothingLeft(t, "")
	if ents, _ := filepath.Glob(filepath.Join(os.TempDir(), "chainvol-backup-serve-*")); len(ents) > 0 {
		t.Errorf("serve directories left: %v", ents)
	}
}

// serveRun is a running "backup serve" and its printed address and token.
type serveRun struct {
	t              *testing.T
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	addr, token    string
	cl             *http.Client
}

// startServe starts "backup serve REF --idle 3s -o json EXTRA..." on a
// free port and returns once it printed its address, fingerprint and
// token; its client checks the certificate against the printed
// fingerprint. A flag in extra overrides the one before it (--idle).
func (e *restoreEnv) startServe(t *testing.T, ref string, extra ...string) *serveRun {
	t.Helper()
	sv := &serveRun{t: t}
	sv.cmd = exec.Command(binary, e.args(append([]string{"backup", "serve", ref, "--listen", "127.0.0.1:0", "--idle", "3s", "-o", "json"}, extra...)...)...)
	sv.cmd.Env = append(os.Environ(), e.c.env...)
	sv.cmd.Stdout, sv.cmd.Stderr = &sv.stdout, &sv.stderr
	if err := sv.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sv.cmd.Process.Kill() })
	re := regexp.MustCompile(`(?s)at https://([0-9.:]+)/ .*fingerprint ([0-9a-f]{64}).*token \(shown once\): (\S+)`)
	var m []string
	for deadline := time.Now().Add(60 * time.Second); m == nil; time.Sleep(50 * time.Millisecond) {
		if m = re.FindStringSubmatch(sv.stderr.String()); m == nil && time.Now().After(deadline) {
			t.Fatalf("no address and token printed: %s", sv.stderr.String())
		}
	}
	fp := m[2]
	sv.addr, sv.token = m[1], m[3]
	sv.cl = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if sum := sha256.Sum256(raw[0]); hex.EncodeToString(sum[:]) != fp {
				return errors.New("certificate does not match the printed fingerprint")
			}
			return nil
		}}}}
	return sv
}

// get requests path with token tok and Range rng ("" for none).
func (sv *serveRun) get(path, tok, rng string) (int, []byte) {
	t, addr, cl := sv.t, sv.addr, sv.cl
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "https://"+addr+path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestBackupServeRaw: a backup without a filesystem is served as /image,
// whole and by Range, equal to the source.
func TestBackupServeRaw(t *testing.T) {
	testutil.RequireFUSE(t)
	e := newRestoreEnv(t)
	raw := e.rawBackup(t, 4<<20+3)
	src, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	sv := e.startServe(t, "s3:lab/raw@latest")
	if code, body := sv.get("/image", sv.token, ""); code != 200 || !bytes.Equal(body, src) {
		t.Errorf("/image: %d, %d bytes", code, len(body))
	}
	if code, body := sv.get("/image", sv.token, "bytes=2097000-2097199"); code != http.StatusPartialContent || !bytes.Equal(body, src[2097000:2097200]) {
		t.Errorf("/image range: %d, %d bytes", code, len(body))
	}
	if err := sv.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := sv.cmd.Wait(); err != nil {
		t.Fatalf("serve: %v: %s", err, sv.stderr.String())
	}
	checkNothingLeft(t, "")
}
