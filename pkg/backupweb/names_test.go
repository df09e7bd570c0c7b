package backupweb

import (
	"archive/tar"
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOddNames: directories whose names hold URL delimiters ("?", "#",
// "%") are reached through their redirect and their links, and a name
// that looks like a URL scheme ("http:evil.example") links to itself,
// never to another site.
func TestOddNames(t *testing.T) {
	c, _, _ := newClient(t)
	root := c.root
	for _, d := range []string{"sub/q?x", "h#x", "pc%41"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, d, "inner"), []byte("in "+d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "http:evil.example"), []byte("scheme"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, loc string }{
		{"/sub/q%3Fx", "/sub/q%3Fx/"}, {"/h%23x", "/h%23x/"}, {"/pc%2541", "/pc%2541/"},
	} {
		resp, _ := c.get(tc.path, c.auth())
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != tc.loc {
			t.Errorf("%s: %d to %q, want 301 to %q", tc.path, resp.StatusCode, resp.Header.Get("Location"), tc.loc)
			continue
		}
		if resp, body := c.get(tc.loc, c.auth()); resp.StatusCode != 200 || !strings.Contains(string(body), `href="./inner"`) {
			t.Errorf("%s: %d\n%s", tc.loc, resp.StatusCode, body)
		}
	}
	_, body := c.get("/", c.auth())
	if page := string(body); strings.Contains(page, `href="http:`) || !strings.Contains(page, `href="./http:evil.example"`) {
		t.Errorf("a scheme-like name links away:\n%s", page)
	}
	if resp, body := c.get("/http:evil.example", c.auth()); resp.StatusCode != 200 || string(body) != "scheme" {
		t.Errorf("/http:evil.example: %d %q", resp.StatusCode, body)
	}
}

// TestCookiePerServer: two servers on one host (cookies ignore the port)
// keep their own cookies: the second's login does not replace the first's,
// and neither's cookie opens the other.
func TestCookiePerServer(t *testing.T) {
	c1, _, h1 := newClient(t)
	c2, _, h2 := newClient(t)
	r1, _ := c1.get("/?token="+c1.token, nil)
	r2, _ := c2.get("/?token="+c2.token, nil)
	ck1, ck2 := r1.Cookies(), r2.Cookies()
	if len(ck1) != 1 || len(ck2) != 1 || ck1[0].Name == ck2[0].Name {
		t.Fatalf("cookies %v and %v: want one each, of different names", ck1, ck2)
	}
	if ck1[0].Name != h1.cookieName() || ck2[0].Name != h2.cookieName() || !ck1[0].HttpOnly || !ck1[0].Secure || ck1[0].SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie %+v", ck1[0])
	}
	both := ck1[0].String() + "; " + ck2[0].String()
	for _, c := range []*client{c1, c2} {
		if resp, _ := c.get("/", map[string]string{"Cookie": both}); resp.StatusCode != 200 {
			t.Errorf("with both cookies: %d", resp.StatusCode)
		}
	}
	if resp, _ := c1.get("/", map[string]string{"Cookie": h1.cookieName() + "=" + c2.token}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the other server's token in this one's cookie: %d", resp.StatusCode)
	}
	if resp, _ := c1.get("/", c1.auth()); resp.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("Referrer-Policy %q", resp.Header.Get("Referrer-Policy"))
	}
}

// TestLinkedDirTar: ?format=tar of a symlink to a directory inside the
// backup is that directory's tar, as its page is its listing.
func TestLinkedDirTar(t *testing.T) {
	c, _, _ := newClient(t)
	if err := os.Symlink("sub", filepath.Join(c.root, "linked")); err != nil {
		t.Fatal(err)
	}
	resp, body := c.get("/linked?format=tar", c.auth())
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-tar" || !strings.Contains(string(body), "linked/b.txt") {
		t.Fatalf("tar of a linked directory: %d %q\n%.300s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// TestSpecialFiles: a fifo and a device node in the backup are refused
// (never opened: a fifo would hang the request, a device would read the
// host's), left out of a tar, and a 255-byte name survives the tar.
func TestSpecialFiles(t *testing.T) {
	c, _, _ := newClient(t)
	long := strings.Repeat("n", 255)
	if err := os.WriteFile(filepath.Join(c.root, "sub", long), []byte("long"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(c.root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mknod(filepath.Join(c.root, "null"), syscall.S_IFCHR|0o644, 1<<8|3); err != nil {
		t.Skip("mknod needs root:", err)
	}
	for _, p := range []string{"/fifo", "/null"} {
		if resp, _ := c.get(p, c.auth()); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", p, resp.StatusCode)
		}
	}
	resp, body := c.get("/?format=tar", c.auth())
	names := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(body))
	for {
		hdr, err := tr.Next()
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		data, _ := io.ReadAll(tr)
		names[hdr.Name] = string(data)
	}
	if resp.StatusCode != 200 || names["backup/sub/"+long] != "long" {
		t.Errorf("tar: %d, long name %q", resp.StatusCode, names["backup/sub/"+long])
	}
	for _, n := range []string{"backup/fifo", "backup/null"} {
		if _, ok := names[n]; ok {
			t.Errorf("tar holds %s", n)
		}
	}
}

// TestNoOpenRedirect: a path starting with "//" is never redirected to
// "//HOST/..." (another site, for a browser), neither by the token's
// redirect nor by a directory's.
func TestNoOpenRedirect(t *testing.T) {
	c, _, _ := newClient(t)
	for _, tc := range []struct {
		path string
		hdr  map[string]string
	}{{"//evil.example/?token=" + c.token, nil}, {"//sub", c.auth()}, {"///sub", c.auth()}} {
		resp, _ := c.get(tc.path, tc.hdr)
		loc := resp.Header.Get("Location")
		if resp.StatusCode/100 == 3 && (strings.HasPrefix(loc, "//") || strings.Contains(loc, "://")) {
			t.Errorf("%s: redirected to %q", tc.path, loc)
		}
	}
}
