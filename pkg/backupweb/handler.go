package backupweb

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// cookiePrefix starts the name of the cookie that carries the token for a
// browser, set by a ?token= link (cookieName).
const cookiePrefix = "chainvol_token_"

// Handler serves the tree under root, read-only. Every request must carry
// the token: "Authorization: Bearer TOKEN", the cookie a "?token=TOKEN"
// request sets (then redirected without it), else 401.
type Handler struct {
	root  *os.Root
	token string
	title string
	// last is the time of the last authenticated request (Unix ns): the
	// idle TTL's clock.
	last atomic.Int64
	// active counts the authenticated requests being answered: a long
	// download is not idleness.
	active atomic.Int64
}

// New returns a handler of root (which the caller closes after the
// server) for token, titling its pages with title.
func New(root *os.Root, token, title string) *Handler {
	h := &Handler{root: root, token: token, title: title}
	h.last.Store(time.Now().UnixNano())
	return h
}

// Idle is how long ago the last authenticated request ended (0 while one
// is being answered).
func (h *Handler) Idle() time.Duration {
	if h.active.Load() > 0 {
		return 0
	}
	return time.Since(time.Unix(0, h.last.Load()))
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// The first URL holds the token: no page of it names it to another site.
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	if t := r.URL.Query().Get("token"); t != "" && h.valid(t) {
		http.SetCookie(w, &http.Cookie{Name: h.cookieName(), Value: t, Path: "/", HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
		q := r.URL.Query()
		q.Del("token")
		name, _ := cleanPath(r.URL.Path)
		http.Redirect(w, r, location(name, strings.HasSuffix(r.URL.Path, "/"), q.Encode()), http.StatusSeeOther)
		return
	}
	if !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="chainvol backup"`)
		http.Error(w, "a valid token is required (Authorization: Bearer TOKEN, or open the URL with ?token=TOKEN)", http.StatusUnauthorized)
		return
	}
	h.active.Add(1)
	defer func() { h.last.Store(time.Now().UnixNano()); h.active.Add(-1) }()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "read-only", http.StatusMethodNotAllowed)
		return
	}
	name, ok := cleanPath(r.URL.Path)
	if !ok {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	fi, err := h.root.Lstat(name)
	if err != nil {
		httpError(w, err)
		return
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		h.serveLink(w, r, name)
	case fi.IsDir() && r.URL.Query().Get("format") == "tar":
		h.serveTar(w, r, name)
	case fi.IsDir():
		h.serveDir(w, r, name)
	case fi.Mode().IsRegular():
		h.serveFile(w, r, name)
	default:
		http.Error(w, "not a file or directory", http.StatusForbidden)
	}
}

func (h *Handler) valid(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(h.token)) == 1
}

func (h *Handler) authorized(r *http.Request) bool {
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && h.valid(a) {
		return true
	}
	c, err := r.Cookie(h.cookieName())
	return err == nil && h.valid(c.Value)
}

// cleanPath turns a URL path into a name inside the root ("." for the
// root itself); a path with a ".." element is refused rather than
// cleaned, so that no request is answered for a name it did not mean.
func cleanPath(p string) (string, bool) {
	for _, el := range strings.Split(p, "/") {
		if el == ".." || strings.ContainsRune(el, 0) {
			return "", false
		}
	}
	name := strings.Trim(path.Clean("/"+p), "/")
	if name == "" {
		return ".", true
	}
	return name, true
}

// location is the redirect target of name (cleanPath's), with a trailing
// slash when dir, and query (encoded) when not empty: always one leading
// slash (a "//host" Location is another site for a browser) and every
// element escaped (a name may hold "?", "#" or "%").
func location(name string, dir bool, query string) string {
	p := "/"
	if name != "." && name != "" {
		p += name
		if dir {
			p += "/"
		}
	}
	loc := (&url.URL{Path: p}).EscapedPath()
	if query != "" {
		loc += "?" + query
	}
	return loc
}

// serveFile sends a regular file; http.ServeContent answers Range,
// If-Range and HEAD.
func (h *Handler) serveFile(w http.ResponseWriter, r *http.Request, name string) {
	f, err := h.root.Open(name)
	if err != nil {
		httpError(w, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		httpError(w, err)
		return
	}
	w.Header().Set("Content-Disposition", "attachment; filename*=UTF-8''"+urlEscape(path.Base(name)))
	http.ServeContent(w, r, path.Base(name), fi.ModTime(), f)
}

// serveLink follows a symlink only when it stays inside the root
// (os.Root refuses the rest: 403), as its target would be served.
func (h *Handler) serveLink(w http.ResponseWriter, r *http.Request, name string) {
	fi, err := h.root.Stat(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			httpError(w, err)
			return
		}
		http.Error(w, "the symlink points outside the backup", http.StatusForbidden)
		return
	}
	switch {
	case fi.IsDir() && r.URL.Query().Get("format") == "tar":
		h.serveTar(w, r, name)
	case fi.IsDir():
		h.serveDir(w, r, name)
	default:
		h.serveFile(w, r, name)
	}
}

func httpError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		http.Error(w, "not found", http.StatusNotFound)
	case errors.Is(err, fs.ErrPermission):
		http.Error(w, "forbidden", http.StatusForbidden)
	default:
		// An escape attempt (os.Root: "path escapes from parent") or an
		// I/O error of the backup (EIO: a block that cannot be fetched).
		if strings.Contains(err.Error(), "escapes") {
			http.Error(w, "the path leaves the backup", http.StatusForbidden)
			return
		}
		http.Error(w, "cannot read the backup: "+err.Error(), http.StatusBadGateway)
	}
}

// entry is one row of a directory page.
type entry struct {
	Name, Href, Link string
	Dir              bool
	Size             int64
	ModTime          string
}

var dirPage = template.Must(template.New("dir").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>{{.Title}}: /{{.Path}}</title>
<style>body{font-family:sans-serif;margin:2em}td{padding:0 1em}a{text-decoration:none}</style></head>
<body><h1>{{.Title}}</h1><h2>/{{.Path}}</h2>
<p><a href="?format=tar">download this directory as tar</a></p>
<table><tr><th>name</th><th>size</th><th>modified</th></tr>
{{if .Parent}}<tr><td><a href="../">../</a></td></tr>{{end}}
{{range .Entries}}<tr><td>{{if .Link}}{{.Name}} → {{.Link}}{{else}}<a href="{{.Href}}">{{.Name}}{{if .Dir}}/{{end}}</a>{{end}}</td><td>{{if not .Dir}}{{.Size}}{{end}}</td><td>{{.ModTime}}</td></tr>
{{end}}</table></body></html>
`))

// serveDir lists a directory; a URL without its trailing slash is
// redirected to it so that relative links work (to the escaped path: a
// name may hold "?", "#" or "%").
func (h *Handler) serveDir(w http.ResponseWriter, r *http.Request, name string) {
	if !strings.HasSuffix(r.URL.Path, "/") {
		http.Redirect(w, r, location(name, true, ""), http.StatusMovedPermanently)
		return
	}
	d, err := h.root.Open(name)
	if err != nil {
		httpError(w, err)
		return
	}
	defer d.Close()
	des, err := d.ReadDir(-1)
	if err != nil {
		httpError(w, err)
		return
	}
	sort.Slice(des, func(i, j int) bool { return des[i].Name() < des[j].Name() })
	var rows []entry
	for _, de := range des {
		// "./": a name with a colon ("http:x") is a path, not a scheme.
		e := entry{Name: de.Name(), Href: "./" + urlEscape(de.Name()), Dir: de.IsDir()}
		if de.IsDir() {
			e.Href += "/"
		}
		if fi, err := de.Info(); err == nil {
			e.Size, e.ModTime = fi.Size(), fi.ModTime().UTC().Format(time.RFC3339)
		}
		if de.Type()&fs.ModeSymlink != 0 {
			e.Link, _ = h.root.Readlink(path.Join(name, de.Name()))
			if e.Link == "" {
				e.Link = "?"
			}
		}
		rows = append(rows, e)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	p := strings.TrimPrefix(name, ".")
	_ = dirPage.Execute(w, map[string]any{"Title": h.title, "Path": p, "Parent": name != ".", "Entries": rows})
}

// cookieName is the name of h's cookie: cookies ignore the port (RFC 6265
// §8.5), so two servers on one host each need their own name, else the
// second login replaces the first's cookie. The name holds a hash of the
// token, which reveals nothing of it.
func (h *Handler) cookieName() string {
	sum := sha256.Sum256([]byte(h.token))
	return cookiePrefix + hex.EncodeToString(sum[:6])
}
