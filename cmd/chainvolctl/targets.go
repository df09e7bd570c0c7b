package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// Environment variables read when the matching flag is not given.
const (
	envTargets         = "CHAINVOL_TARGETS"
	envAccessKeyID     = "CHAINVOL_ACCESS_KEY_ID"
	envSecretAccessKey = "CHAINVOL_SECRET_ACCESS_KEY"
	envEncryptionKey   = "CHAINVOL_ENCRYPTION_KEY"
)

// targetSet builds the configured targets: --target, else CHAINVOL_TARGETS,
// else the driver's embedded default under --state-dir.
func (a *app) targetSet() (*target.Set, error) {
	specs := a.targets
	if len(specs) == 0 {
		for _, s := range strings.Split(os.Getenv(envTargets), ",") {
			if s = strings.TrimSpace(s); s != "" {
				specs = append(specs, s)
			}
		}
	}
	if !filepath.IsAbs(a.stateDir) {
		return nil, usagef("--state-dir %q must be an absolute path", a.stateDir)
	}
	var file target.Secrets
	if a.credentialsFile != "" {
		var err error
		if file, err = target.ReadSecretsFile(a.credentialsFile); err != nil {
			return nil, fmt.Errorf("%w (check --credentials-file)", err)
		}
	}
	set, err := target.NewSet(specs, defaultTargetURL(a.stateDir), file)
	if err != nil {
		return nil, usageError{fmt.Errorf("%w (check --target or %s)", err, envTargets)}
	}
	for _, t := range set.Targets() {
		if err := checkTargetURL(t); err != nil {
			return nil, usageError{fmt.Errorf("target %s: %w (check --target or %s)", t.Name, err, envTargets)}
		}
	}
	return set, nil
}

// checkTargetURL reports a malformed target URL before anything is
// contacted, so that it is a usage error (exit 2) like any bad argument.
// The rules are store.Open's own: it parses the URL before any I/O,
// so it is called with a cancelled context, which stops it at its first
// request (the bucket check) with an error that is not ErrBadTarget. A
// well-formed file:// URL is not opened: its directory may not exist yet.
func checkTargetURL(t target.Target) error {
	if _, ok := fileTargetDir(t.URL); ok {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := store.Open(ctx, t.URL, store.Credentials{}); errors.Is(err, store.ErrBadTarget) {
		return err
	}
	return nil
}

// fileTargetDir returns the directory of a well-formed file:///DIR target
// URL (an absolute path other than /, no host, query or dot segments: the
// rules of store.Open), and false for any other URL.
func fileTargetDir(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "file" || u.Host != "" || u.User != nil || u.RawQuery != "" || u.Opaque != "" ||
		u.Fragment != "" || !path.IsAbs(u.Path) || u.Path == "/" {
		return "", false
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return "", false
		}
	}
	return path.Clean(u.Path), true
}

// emptyTarget is emptyFileTarget for the configured targets; a
// configuration error is left to openRepo to report.
func (a *app) emptyTarget(name string) (string, bool) {
	set, err := a.targetSet()
	if err != nil {
		return "", false
	}
	return emptyFileTarget(set, name)
}

// emptyFileTarget returns a note when target name is a file:// target whose
// directory does not exist yet: such a target is empty, not unreachable, and
// "backup create" (or the driver's first backup) creates the directory.
func emptyFileTarget(set *target.Set, name string) (note string, empty bool) {
	t, err := set.Lookup(name)
	if err != nil {
		return "", false
	}
	dir, ok := fileTargetDir(t.URL)
	if !ok {
		return "", false
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	return fmt.Sprintf("target %s is empty: its directory %s does not exist (check the path in its URL; a first backup would create it)", t.Name, dir), true
}

// defaultTargetURL is the driver's embedded default backup target.
func defaultTargetURL(stateDir string) string {
	return "file://" + filepath.Join(stateDir, "backups")
}

// envSecrets are the credentials from the environment, in the keys of a
// CSI secrets map so that target.Set.Open overlays them on the file's.
func envSecrets() map[string]string {
	m := map[string]string{}
	for key, env := range map[string]string{
		target.KeyAccessKeyID:     envAccessKeyID,
		target.KeySecretAccessKey: envSecretAccessKey,
		target.KeyEncryptionKey:   envEncryptionKey,
	} {
		if v := os.Getenv(env); v != "" {
			m[key] = v
		}
	}
	return m
}

// lookupTarget returns the configured target called name ("" = the
// default). Errors: targetSet's, and a usage error naming the configured
// targets when none is called name (a --in or [TARGET:] of a typo).
func (a *app) lookupTarget(name string) (target.Target, error) {
	set, err := a.targetSet()
	if err != nil {
		return target.Target{}, err
	}
	t, err := set.Lookup(name)
	if err != nil {
		return t, usageError{explain(err)}
	}
	return t, nil
}

// openRepo opens the chain repository of the named target ("" = default).
func (a *app) openRepo(ctx context.Context, name string) (*s3chain.Repo, error) {
	set, err := a.targetSet()
	if err != nil {
		return nil, err
	}
	if _, err := set.Lookup(name); err != nil {
		return nil, usageError{explain(err)} // --in or a reference names no configured target
	}
	if note, empty := emptyFileTarget(set, name); empty {
		return nil, fmt.Errorf("%w: %s", errEmptyTarget, note)
	}
	repo, err := set.Open(ctx, name, envSecrets())
	if err != nil {
		return nil, explain(err)
	}
	return repo, nil
}

// errEmptyTarget: a file:// target whose directory does not exist yet. Read
// commands fail with it (there is nothing to show) and "chain ls" and
// "target check" report the target as empty.
var errEmptyTarget = fmt.Errorf("%w: no backups", s3chain.ErrBackupNotFound)

// parseChainArg reads "[TARGET:]CHAIN" into a target name and a chain.
func parseChainArg(s string) (tgt, chain string, err error) {
	ref, err := target.ParseRef(s + "@" + target.Latest)
	if err != nil {
		return "", "", usagef("chain %q must be [TARGET:]CHAIN, e.g. demo/data or offsite:demo/data", s)
	}
	return ref.Target, ref.Chain, nil
}

// parseRefArg reads "[TARGET:]CHAIN@BACKUP" as a usage error when malformed.
func parseRefArg(s string) (target.Ref, error) {
	ref, err := target.ParseRef(s)
	if err != nil {
		return ref, usageError{fmt.Errorf("%q must be [TARGET:]CHAIN@BACKUP, e.g. demo/data@latest or demo/data@before:2026-11-29T10:00:00Z (%w)", s, err)}
	}
	return ref, nil
}

// resolveRef opens the reference's target and reads its manifest, turning
// "latest", "before:T" or "group:ID" into one backup.
func (a *app) resolveRef(ctx context.Context, s string) (*s3chain.Repo, *s3chain.Manifest, error) {
	ref, err := parseRefArg(s)
	if err != nil {
		return nil, nil, err
	}
	repo, err := a.openRepo(ctx, ref.Target)
	if err != nil {
		return nil, nil, err
	}
	m, err := target.Select(ctx, repo, ref)
	if err != nil {
		return nil, nil, explain(err)
	}
	return repo, m, nil
}
