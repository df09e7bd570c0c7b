package backupweb

import (
	"archive/tar"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
)

func urlEscape(s string) string { return url.PathEscape(s) }

// serveTar streams directory name as a tar archive (PAX format): its
// directories, regular files and symlinks (as links, never followed), in
// lexical order, walked through os.Root's fs.FS so nothing outside the
// root is read. An error part-way (a block of the backup that cannot be
// fetched) cuts the stream: the archive then lacks its end-of-archive
// marker, which tar(1) reports, rather than holding a short file.
func (h *Handler) serveTar(w http.ResponseWriter, r *http.Request, name string) {
	base := path.Base(name)
	if name == "." {
		base = "backup"
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Content-Disposition", "attachment; filename*=UTF-8''"+urlEscape(base+".tar"))
	if r.Method == http.MethodHead {
		return
	}
	fsys := h.root.FS()
	tw := tar.NewWriter(w)
	err := fs.WalkDir(fsys, name, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return h.tarEntry(tw, fsys, name, base, p, d)
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		// Too late for a status: abort the response so the client sees a
		// broken transfer, never a complete-looking archive.
		panic(http.ErrAbortHandler)
	}
}

// tarEntry writes the entry of path p (found under dir, named base/... in
// the archive).
func (h *Handler) tarEntry(tw *tar.Writer, fsys fs.FS, dir, base, p string, d fs.DirEntry) error {
	fi, err := d.Info()
	if err != nil {
		return err
	}
	link := ""
	if fi.Mode()&fs.ModeSymlink != 0 {
		if link, err = h.root.Readlink(p); err != nil {
			return err
		}
	} else if !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil // devices, fifos, sockets: not content
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
	hdr.Name = path.Join(base, rel)
	if fi.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname, hdr.Format = "", "", tar.FormatPAX
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	f, err := fsys.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}
