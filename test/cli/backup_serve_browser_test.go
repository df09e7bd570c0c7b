package cli

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/chainvol/chainvol/internal/testutil"
)

// TestBackupServeBrowser (issue 27): "backup serve" as a person uses it,
// in headless Chromium (Debian's chromium, which make deps installs): a
// wrong token gets the 401 page and no listing; the printed browser link
// logs in and a click opens sub/, whose screenshot (a PNG in the test's
// artifact directory) shows a rendered page and whose DOM lists the
// backup's file names; a click on a file downloads it through the browser
// with the source's sha256; a symlink out of the backup (absolute or
// relative) gets the 403 page, never the host's file.
func TestBackupServeBrowser(t *testing.T) {
	testutil.RequireFUSE(t)
	ctx := newBrowser(t, requireChromium(t))
	e := newRestoreEnvOf(t, func(t testing.TB, dir string) string { return makeFSImage(t, dir, "ext4", imageSize, browseTree) })
	// A minute of idle TTL: the browser's steps are seconds apart here.
	sv := e.startServe(t, "s3:lab/x@latest", "--idle", "60s")
	base := "https://" + sv.addr

	if code, text := visit(t, ctx, base+"/sub/?token=wrong"); code != 401 || !strings.Contains(text, "a valid token is required") || strings.Contains(text, "filea") {
		t.Errorf("a wrong token: %d %q, want the 401 page", code, text)
	}
	if code, text := visit(t, ctx, base+"/?token="+sv.token); code != 200 || !strings.Contains(text, "sub/") {
		t.Fatalf("the printed browser link: %d %q, want the root's page", code, text)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`a[href="./sub/"]`)), chromedp.WaitVisible(chromedp.CSS(`a[href="./filea"]`)))
	shot := get(t, ctx, chromedp.CaptureScreenshot())
	names := get(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("td:first-child")).map(td => td.textContent)`))
	checkScreenshot(t, shot)
	listed := strings.Join(names, "\n")
	for _, want := range []string{"../", "deep/", "escape → /etc/hostname", "filea", "fileb", "filec", "filed", "inside → filed", "up → ../../etc/hostname"} {
		if !strings.Contains(listed, want) {
			t.Errorf("sub/'s page lists %q, want %q in it", names, want)
		}
	}

	got := download(t, ctx, `a[href="./fileb"]`)
	if want := sha(t, filepath.Join(e.dir, "content", "sub", "fileb")); sha(t, got) != want {
		t.Errorf("fileb downloaded by the browser: sha256 %s, want %s", sha(t, got), want)
	}

	host, _ := os.ReadFile("/etc/hostname")
	for _, link := range []string{"escape", "up"} {
		code, text := visit(t, ctx, base+"/sub/"+link)
		if code != 403 || !strings.Contains(text, "outside the backup") || len(host) > 1 && strings.Contains(text, strings.TrimSpace(string(host))) {
			t.Errorf("sub/%s, a symlink out of the backup: %d %q, want the 403 page", link, code, text)
		}
	}

	if err := sv.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := sv.cmd.Wait(); err != nil {
		t.Fatalf("serve: %v: %s", err, sv.stderr.String())
	}
	checkNothingLeft(t, "")
}

// requireChromium returns the path of Debian's chromium; without it the
// test is skipped, or fails under CI=true (make deps installs it).
func requireChromium(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err != nil {
		testutil.SkipOrFail(t, "test needs chromium (Debian's package; make deps installs it): "+err.Error())
	}
	return p
}

// newBrowser starts headless Chromium at exe with a fresh profile, which
// accepts the server's self-signed certificate and uses no proxy; the
// context it returns ends the browser at the test's end and bounds every
// step to 60 s in all.
func newBrowser(t *testing.T, exe string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(exe), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1024, 768)}
	for _, f := range []string{"headless", "no-sandbox", "disable-gpu", "disable-quic", "no-first-run", "disable-background-networking",
		"disable-component-update", "disable-sync", "ignore-certificate-errors", "no-proxy-server"} {
		opts = append(opts, chromedp.Flag(f, true))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	// The first Run starts the browser, tied to bctx (not to a timeout).
	if err := chromedp.Do(bctx); err != nil {
		cancelBrowser()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	t.Cleanup(func() { cancel(); cancelBrowser(); cancelAlloc() })
	return ctx
}

// do runs browser actions, failing the test on error.
func do(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// get runs a browser action and returns its value, failing the test on
// error.
func get[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	return v
}

// visit opens url in the browser and returns the HTTP status of the page
// it ends on (after redirects) and the page's text.
func visit(t *testing.T, ctx context.Context, url string) (int, string) {
	t.Helper()
	resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(url))
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	return int(resp.Status), get(t, ctx, chromedp.Text(chromedp.CSS("body")))
}

// download clicks the link at selector (CSS), a file the server sends as
// an attachment, and returns the path of the file the browser saved.
func download(t *testing.T, ctx context.Context, selector string) string {
	t.Helper()
	dir := t.TempDir()
	progress := chromedp.Events(ctx, browser.DownloadProgress)
	// AllowAndName: the file is saved as its download's GUID.
	do(t, ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
			Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: new(true)})
		return err
	}), chromedp.Click(chromedp.CSS(selector)))
	for ev, err := range progress {
		switch {
		case err != nil:
			t.Fatalf("download of %s: %v", selector, err)
		case ev.State == browser.DownloadProgressStateCanceled:
			t.Fatalf("the browser canceled the download of %s", selector)
		case ev.State == browser.DownloadProgressStateCompleted:
			return filepath.Join(dir, ev.GUID)
		}
	}
	t.Fatalf("download of %s: no end", selector)
	return ""
}

// checkScreenshot writes the screenshot to the test's artifact directory
// (kept with go test -artifacts) and fails unless it is a PNG of the
// window's size holding more than one colour (text drawn, not a blank
// page).
func checkScreenshot(t *testing.T, shot []byte) {
	t.Helper()
	path := filepath.Join(t.ArtifactDir(), "sub.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot %s (%d bytes): %v", path, len(shot), err)
	}
	b := img.Bounds()
	colours := map[[4]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y && len(colours) < 2; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}] = true
		}
	}
	t.Logf("screenshot %s: %d bytes, %dx%d", path, len(shot), b.Dx(), b.Dy())
	if b.Dx() < 100 || b.Dy() < 100 || len(colours) < 2 {
		t.Errorf("screenshot %s: %dx%d, %d colours: want a drawn page", path, b.Dx(), b.Dy(), len(colours))
	}
}
