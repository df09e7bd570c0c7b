package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/chainvol/chainvol/pkg/backupweb"
)

// serveFlags are the options of "backup serve".
type serveFlags struct {
	mountFlags
	listen, cert, key string
	idle              time.Duration
}

func (a *app) newBackupServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [TARGET:]CHAIN@BACKUP --listen ADDR",
		Short: "Serve a backup's files over HTTPS without restoring it",
		Long: `Serve the files of a backup over HTTPS, mounted as "backup mount" mounts it
(lazily, read-only, no journal replay, nothing written to the target):
directory pages to click through in a browser, file downloads with Range,
any directory as a tar stream (?format=tar), and the raw image
(/image) of a backup without a filesystem. Symlinks are listed with their
target and served only when they point inside the backup; ".." never
leaves it.

Every request needs the bearer token printed once at start
("Authorization: Bearer TOKEN", or open the printed URL with ?token=TOKEN
in a browser, which keeps it in a cookie). The certificate is self-signed
(its SHA-256 fingerprint is printed) unless --cert and --key are given.
The server exits, unmounting everything, after --idle without an
authenticated request, on Ctrl-C or SIGTERM. Needs root and /dev/fuse.`,
		Example: `  chainvolctl backup serve demo/data@latest --listen 127.0.0.1:8443
  chainvolctl backup serve offsite:prod/db@latest --listen :8443 --idle 1h --cert tls.crt --key tls.key`,
		Args: args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, argv []string) error { return a.backupServe(cmd, argv[0], f) }),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "", "address to listen on, HOST:PORT (required)")
	fl.StringVar(&f.cert, "cert", "", "PEM certificate file (default: a new self-signed one)")
	fl.StringVar(&f.key, "key", "", "PEM private key file of --cert")
	fl.DurationVar(&f.idle, "idle", 15*time.Minute, "exit after this long without an authenticated request")
	f.mountFlags.add(fl, "fails")
	_ = cmd.MarkFlagRequired("listen")
	return cmd
}

func (a *app) backupServe(cmd *cobra.Command, refArg string, f serveFlags) error {
	ctx := cmd.Context()
	if f.idle <= 0 {
		return usagef("--idle %s: must be positive", f.idle)
	}
	if (f.cert == "") != (f.key == "") {
		return usagef("--cert and --key go together")
	}
	host, _, err := net.SplitHostPort(f.listen)
	if err != nil {
		return usagef("--listen %q: %v (want HOST:PORT, e.g. 127.0.0.1:8443, or :8443 for every address)", f.listen, err)
	}
	cert, fingerprint, err := serveCert(f, shownHost(host))
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", f.listen)
	if err != nil {
		return err
	}
	defer l.Close()
	dir, err := os.MkdirTemp("", "chainvol-backup-serve-")
	if err != nil {
		return err
	}
	defer os.Remove(dir)
	s, err := a.openBrowse(ctx, refArg, dir, f.mountFlags)
	if err != nil {
		return err
	}
	defer s.close()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return errors.Join(err, s.bw.Close())
	}
	token := backupweb.NewToken()
	h := backupweb.New(root, token, s.m.Chain+"@"+s.m.ID)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(l, "", "") }()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	a.tellServing(cmd.ErrOrStderr(), s, net.JoinHostPort(shownHost(host), port), token, fingerprint, f.idle)
	err = waitServe(ctx, h, f.idle, served)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	_ = srv.Shutdown(sctx)
	cancel()
	root.Close()
	if err != nil {
		return errors.Join(err, s.bw.Close())
	}
	return a.endBrowse(cmd, s, "stopped serving")
}

// waitServe returns nil on a signal or after idle without an
// authenticated request, the server's error if it stops by itself.
func waitServe(ctx context.Context, h *backupweb.Handler, idle time.Duration, served <-chan error) error {
	tick := time.NewTicker(min(time.Second, idle/4))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-served:
			return err
		case <-tick.C:
			if h.Idle() >= idle {
				return nil
			}
		}
	}
}

// serveCert loads --cert/--key or makes a self-signed certificate for
// host (valid one week); it returns the certificate's SHA-256 fingerprint
// when self-signed ("" otherwise).
func serveCert(f serveFlags, host string) (tls.Certificate, string, error) {
	if f.cert != "" {
		c, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return c, "", fmt.Errorf("--cert %s --key %s: %w", f.cert, f.key, err)
		}
		return c, "", nil
	}
	return backupweb.SelfSigned([]string{host}, 7*24*time.Hour)
}

// tellServing prints, once, where the backup is served and its token.
func (a *app) tellServing(w io.Writer, s *browseSession, addr, token, fingerprint string, idle time.Duration) {
	what := "files"
	if s.m.FSType == "" {
		what = "raw image (/image)"
	}
	fmt.Fprintf(w, "serving the %s of %s@%s (%s) at https://%s/ until %s idle, Ctrl-C or SIGTERM\n", what, s.m.Chain, s.m.ID, bytesStr(s.m.SizeBytes), addr, idle)
	if fingerprint != "" {
		fmt.Fprintf(w, "self-signed certificate, SHA-256 fingerprint %s\n", fingerprint)
	}
	fmt.Fprintf(w, "token (shown once): %s\nbrowser: https://%s/?token=%s\n", token, addr, token)
}

// shownHost is the host of the printed URL (and of the self-signed
// certificate) for the --listen host: as given, but an unspecified one
// ("", 0.0.0.0, ::), which a browser cannot open, becomes this machine's
// host name.
func shownHost(host string) string {
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return host
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "localhost"
}
