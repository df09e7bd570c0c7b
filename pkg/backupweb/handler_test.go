package backupweb

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree makes root/{a.bin, sub/b.txt, sub/<script>.txt, in -> sub/b.txt,
// out -> /etc/passwd, up -> ../secret} and root/../secret, and returns
// the root and a.bin's bytes.
func tree(t *testing.T) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := make([]byte, 300<<10)
	_, _ = rand.Read(a)
	for name, data := range map[string][]byte{"a.bin": a, "sub/b.txt": []byte("bee"), "sub/<script>.txt": []byte("x"), "../secret": []byte("SECRET")} {
		if err := os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{"in": "sub/b.txt", "out": "/etc/passwd", "up": "../secret"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	return root, a
}

type client struct {
	t     *testing.T
	root  string
	srv   *httptest.Server
	token string
}

func newClient(t *testing.T) (*client, []byte, *Handler) {
	root, a := tree(t)
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	h := New(r, NewToken(), "lab/x@b1")
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return &client{t: t, root: root, srv: srv, token: h.token}, a, h
}

// get requests path (raw, as sent) with the token when withToken.
func (c *client) get(path string, hdr map[string]string) (*http.Response, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.srv.URL+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	cl := c.srv.Client()
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := cl.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

func (c *client) auth() map[string]string {
	return map[string]string{"Authorization": "Bearer " + c.token}
}

func TestTokenRequired(t *testing.T) {
	c, _, h := newClient(t)
	for _, hdr := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Cookie": h.cookieName() + "=wrong"}} {
		if resp, _ := c.get("/a.bin", hdr); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%v: status %d, want 401", hdr, resp.StatusCode)
		}
	}
	resp, _ := c.get("/sub/?token="+c.token, nil)
	ck := resp.Header.Get("Set-Cookie")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/sub/" || !strings.Contains(ck, "HttpOnly") || !strings.Contains(ck, "Secure") {
		t.Fatalf("?token=: %d, Location %q, Set-Cookie %q", resp.StatusCode, resp.Header.Get("Location"), ck)
	}
	if resp, body := c.get("/sub/", map[string]string{"Cookie": h.cookieName() + "=" + c.token}); resp.StatusCode != 200 || !strings.Contains(string(body), "b.txt") {
		t.Errorf("with the cookie: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodPost, c.srv.URL+"/a.bin", nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	if resp, err := c.srv.Client().Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %v %v", resp, err)
	}
}

func TestDirectoryPage(t *testing.T) {
	c, _, h := newClient(t)
	resp, body := c.get("/", c.auth())
	page := string(body)
	if resp.StatusCode != 200 || !strings.Contains(page, `href="./a.bin"`) || !strings.Contains(page, `href="./sub/"`) || !strings.Contains(page, "out → /etc/passwd") {
		t.Fatalf("root page: %d\n%s", resp.StatusCode, page)
	}
	if _, body := c.get("/sub/", c.auth()); strings.Contains(string(body), "<script>") || !strings.Contains(string(body), "&lt;script&gt;") {
		t.Errorf("a name is not escaped:\n%s", body)
	}
	if resp, _ := c.get("/sub", c.auth()); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/sub/" {
		t.Errorf("/sub: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if h.Idle() > 5e9 {
		t.Errorf("idle %v right after a request", h.Idle())
	}
}

func TestDownloadRange(t *testing.T) {
	c, a, _ := newClient(t)
	if resp, body := c.get("/a.bin", c.auth()); resp.StatusCode != 200 || !bytes.Equal(body, a) {
		t.Fatalf("download: %d, %d bytes", resp.StatusCode, len(body))
	}
	hdr := c.auth()
	hdr["Range"] = "bytes=1000-1999"
	resp, body := c.get("/a.bin", hdr)
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, a[1000:2000]) || resp.Header.Get("Content-Range") != "bytes 1000-1999/307200" {
		t.Fatalf("range: %d %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Range"), len(body))
	}
	if resp, body := c.get("/in", c.auth()); resp.StatusCode != 200 || string(body) != "bee" {
		t.Errorf("a symlink inside the root: %d %q", resp.StatusCode, body)
	}
}

// TestNeverLeavesRoot: symlinks out of the root and ".." paths are
// refused, and the bytes outside are never sent.
func TestNeverLeavesRoot(t *testing.T) {
	c, _, _ := newClient(t)
	for _, p := range []string{"/out", "/up", "/../secret", "/sub/../../secret", "/%2e%2e/secret", "/sub/%2e%2e/%2e%2e/secret"} {
		resp, body := c.get(p, c.auth())
		if resp.StatusCode < 400 || strings.Contains(string(body), "SECRET") || strings.Contains(string(body), "root:") {
			t.Errorf("%s: %d %q", p, resp.StatusCode, body)
		}
	}
}

func TestDirectoryTar(t *testing.T) {
	c, a, _ := newClient(t)
	resp, body := c.get("/?format=tar", c.auth())
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-tar" {
		t.Fatalf("tar: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	got := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(body))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		switch hdr.Typeflag {
		case tar.TypeSymlink:
			got[hdr.Name] = "-> " + hdr.Linkname
		case tar.TypeDir:
			got[hdr.Name] = "dir"
		default:
			got[hdr.Name] = string(data)
		}
	}
	want := map[string]string{"backup/": "dir", "backup/a.bin": string(a), "backup/sub/": "dir", "backup/sub/b.txt": "bee",
		"backup/sub/<script>.txt": "x", "backup/in": "-> sub/b.txt", "backup/out": "-> /etc/passwd", "backup/up": "-> ../secret"}
	if len(got) != len(want) {
		t.Errorf("tar holds %d entries, want %d: %v", len(got), len(want), keys(got))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("tar entry %s: %.20q, want %.20q", k, got[k], v)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestSelfSigned(t *testing.T) {
	cert, fp, err := SelfSigned([]string{"10.1.2.3", "backup.example"}, 1e12)
	if err != nil || len(fp) != 64 {
		t.Fatal(err, fp)
	}
	x, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil || x.VerifyHostname("backup.example") != nil || x.VerifyHostname("10.1.2.3") != nil || x.VerifyHostname("127.0.0.1") != nil {
		t.Fatalf("certificate: %v", err)
	}
	if NewToken() == NewToken() || len(NewToken()) != 43 {
		t.Error("certificate or token")
	}
}
