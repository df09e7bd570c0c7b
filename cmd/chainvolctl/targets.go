package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chainvol/chainvol/pkg/s3chain"
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
	return set, nil
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

// openRepo opens the chain repository of the named target ("" = default).
func (a *app) openRepo(ctx context.Context, name string) (*s3chain.Repo, error) {
	set, err := a.targetSet()
	if err != nil {
		return nil, err
	}
	repo, err := set.Open(ctx, name, envSecrets())
	if err != nil {
		return nil, explain(err)
	}
	return repo, nil
}

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
		return ref, usageError{err}
	}
	return ref, nil
}

// resolveRef opens the reference's target and reads its manifest, turning
// "latest" into the newest backup.
func (a *app) resolveRef(ctx context.Context, s string) (*s3chain.Repo, *s3chain.Manifest, error) {
	ref, err := parseRefArg(s)
	if err != nil {
		return nil, nil, err
	}
	repo, err := a.openRepo(ctx, ref.Target)
	if err != nil {
		return nil, nil, err
	}
	m, err := repo.Manifest(ctx, ref.Chain, ref.Backup)
	if err != nil {
		return nil, nil, explain(err)
	}
	return repo, m, nil
}
