package target

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// ErrUnknownTarget: a reference or parameter names a target that is not configured.
var ErrUnknownTarget = errors.New("unknown backup target")

// DefaultName names the embedded default target when none is configured.
const DefaultName = "default"

// namePattern is the shape of a target name: short, and free of ':' and '@'
// so that it can lead a reference.
var namePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,14}[a-z0-9])?$`)

// Target is one named backup target URL (see s3chain.OpenStore for URLs).
type Target struct {
	Name, URL string
}

// Set is the ordered list of configured targets (the first is the default)
// with the credentials from a credentials file, if any.
type Set struct {
	targets []Target
	file    Secrets
}

// NewSet parses NAME=URL specs; with none, the only target is DefaultName at
// defaultURL (the embedded default). Names must match [a-z0-9-]{1,16} and be
// unique. fileSecrets are used where a request brings none.
func NewSet(specs []string, defaultURL string, fileSecrets Secrets) (*Set, error) {
	s := &Set{file: fileSecrets}
	if len(specs) == 0 {
		s.targets = []Target{{Name: DefaultName, URL: defaultURL}}
		return s, nil
	}
	seen := map[string]bool{}
	for _, spec := range specs {
		name, url, ok := strings.Cut(spec, "=")
		if !ok || !namePattern.MatchString(name) || url == "" {
			return nil, fmt.Errorf("backup target %q must be NAME=URL with NAME of 1-16 [a-z0-9-]", spec)
		}
		if seen[name] {
			return nil, fmt.Errorf("backup target %q is given twice", name)
		}
		seen[name] = true
		s.targets = append(s.targets, Target{Name: name, URL: url})
	}
	return s, nil
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
// request's secrets overlaid on the file's. Errors: ErrUnknownTarget,
// ErrBadSecret, and those of s3chain.OpenStore and s3chain.NewRepo.
func (s *Set) Open(ctx context.Context, name string, reqSecrets map[string]string) (*s3chain.Repo, error) {
	t, err := s.Lookup(name)
	if err != nil {
		return nil, err
	}
	sec := s.file.merge(SecretsFromMap(reqSecrets))
	creds, err := sec.Credentials()
	if err != nil {
		return nil, err
	}
	key, err := sec.Key()
	if err != nil {
		return nil, err
	}
	store, err := s3chain.OpenStore(ctx, t.URL, creds)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", t.Name, err)
	}
	return s3chain.NewRepo(store, s3chain.RepoOptions{EncryptionKey: key})
}
