package target

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// ErrUnknownTarget: a reference or parameter names a target that is not configured.
var ErrUnknownTarget = errors.New("unknown backup target")

// DefaultName names the embedded default target when none is configured.
const DefaultName = "default"

// Target is one named backup target URL (see store.Open for URLs).
type Target struct {
	Name, URL string
}

// Set is the ordered list of configured targets (the first is the default)
// with the credentials of a credentials file, if any.
type Set struct {
	targets []Target
	file    Secrets
	// watched, when set, replaces file: a file read again when it changes.
	watched *credentialsFile
}

// NewSet parses NAME=URL specs; with none, the only target is DefaultName at
// defaultURL (the embedded default). Names must match [a-z0-9-]{1,16} and be
// unique; URLs must pass store.CheckURL (syntax only: a missing directory or
// an unreachable bucket is found by Open). fileSecrets are used where a
// request brings none. Errors name the spec or the target and say what is
// wrong; URL errors wrap store.ErrBadTarget.
func NewSet(specs []string, defaultURL string, fileSecrets Secrets) (*Set, error) {
	s := &Set{file: fileSecrets}
	if len(specs) == 0 {
		s.targets = []Target{{Name: DefaultName, URL: defaultURL}}
		return s, nil
	}
	seen := map[string]bool{}
	for _, spec := range specs {
		name, url, ok := strings.Cut(spec, "=")
		if !ok || !backupid.ValidTargetName(name) || url == "" {
			return nil, fmt.Errorf("backup target %q must be NAME=URL with NAME of 1-16 [a-z0-9-]", spec)
		}
		if err := store.CheckURL(url); err != nil {
			return nil, fmt.Errorf("backup target %q: %w", name, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("backup target %q is given twice", name)
		}
		seen[name] = true
		s.targets = append(s.targets, Target{Name: name, URL: url})
	}
	return s, nil
}

// UseCredentialsFile makes the credentials file at path the source of the
// credentials a request does not bring, in place of NewSet's fileSecrets.
// It is read now (errors: those of ReadSecretsFile) and again by every Open
// after it changed (kubelet's atomic update of a Secret volume), so rotated
// keys apply without a restart.
func (s *Set) UseCredentialsFile(path string) error {
	f, err := newCredentialsFile(path)
	if err != nil {
		return err
	}
	s.watched = f
	return nil
}

// Default returns the default target's name.
func (s *Set) Default() string { return s.targets[0].Name }

// Targets returns the configured targets, the default first.
func (s *Set) Targets() []Target { return append([]Target(nil), s.targets...) }

// Lookup returns the target called name ("" means the default). Errors:
// ErrUnknownTarget, naming the configured ones.
func (s *Set) Lookup(name string) (Target, error) {
	if name == "" {
		return s.targets[0], nil
	}
	var names []string
	for _, t := range s.targets {
		if t.Name == name {
			return t, nil
		}
		names = append(names, t.Name)
	}
	return Target{}, fmt.Errorf("%w %q; configured targets: %s", ErrUnknownTarget, name, strings.Join(names, ", "))
}

// Open opens the chain repository of target name ("" = default) with the
// request's secrets overlaid on the file's. When the target refuses the
// file's access key, the file is read once more and, if it changed, the
// open retried, before the refusal stands. Errors: ErrUnknownTarget,
// ErrBadSecret, those of reading the credentials file, and those of
// store.Open and s3chain.NewRepo.
func (s *Set) Open(ctx context.Context, name string, reqSecrets map[string]string) (*s3chain.Repo, error) {
	t, err := s.Lookup(name)
	if err != nil {
		return nil, err
	}
	req := SecretsFromMap(reqSecrets)
	file, err := s.fileSecrets(false)
	if err != nil {
		return nil, err
	}
	repo, err := s.open(ctx, t, file.merge(req))
	if errors.Is(err, store.ErrAccessDenied) && s.watched != nil && req.AccessKeyID == "" {
		if again, rerr := s.fileSecrets(true); rerr == nil && again != file {
			repo, err = s.open(ctx, t, again.merge(req))
		}
	}
	return repo, err
}

// Create makes target name's directory or bucket (store.CreateTarget) with
// the request's secrets overlaid on the file's, and reports whether it
// created it. Errors: ErrUnknownTarget, ErrBadSecret, those of reading the
// credentials file, and those of store.CreateTarget, prefixed with the
// target's name.
func (s *Set) Create(ctx context.Context, name string, reqSecrets map[string]string) (bool, error) {
	t, err := s.Lookup(name)
	if err != nil {
		return false, err
	}
	file, err := s.fileSecrets(false)
	if err != nil {
		return false, err
	}
	creds, err := file.merge(SecretsFromMap(reqSecrets)).Credentials()
	if err != nil {
		return false, err
	}
	created, err := store.CreateTarget(ctx, t.URL, creds)
	if err != nil {
		return false, fmt.Errorf("target %s: %w", t.Name, err)
	}
	return created, nil
}

// fileSecrets returns the credentials file's secrets (read again if it
// changed, or if force is set).
func (s *Set) fileSecrets(force bool) (Secrets, error) {
	if s.watched == nil {
		return s.file, nil
	}
	return s.watched.secrets(force)
}

// open opens target t's repository with sec.
func (s *Set) open(ctx context.Context, t Target, sec Secrets) (*s3chain.Repo, error) {
	creds, err := sec.Credentials()
	if err != nil {
		return nil, err
	}
	key, err := sec.Key()
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, t.URL, creds)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", t.Name, err)
	}
	return s3chain.NewRepo(st, s3chain.RepoOptions{EncryptionKey: key, LeaseTTL: leaseTTL()})
}

// LeaseTTLEnv names the environment variable that sets the chain lock
// lease TTL (a Go duration; default s3chain.DefaultLeaseTTL). Every writer
// of a target must use the same value (FORMAT.md §7); tests shorten it.
const LeaseTTLEnv = "CHAINVOL_LEASE_TTL"

func leaseTTL() time.Duration {
	d, _ := time.ParseDuration(os.Getenv(LeaseTTLEnv))
	return d
}
