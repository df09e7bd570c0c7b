// Package backupweb serves the files of a mounted backup over HTTPS
// (chainvolctl backup serve, issue 27): directory pages a person clicks
// through, downloads with Range (RFC 9110 §14), a directory as a tar
// stream, behind a bearer token (RFC 6750), read-only. Every path is
// resolved inside an os.Root, so neither ".." nor a symlink leaves the
// backup's root; symlinks are listed with their target and never followed
// out of it.
package backupweb
