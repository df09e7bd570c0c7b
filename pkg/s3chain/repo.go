package s3chain

import (
	"crypto/cipher"
	"fmt"
	"sync"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// Repo is a backup repository: the chains kept in one store.Store. Its methods
// are safe for concurrent use, and so is any number of Repos in any number
// of processes, nodes or clusters on one store: every change to a chain
// follows the protocol of FORMAT.md §7 (self-contained manifests created
// with PutIfAbsent, leased in-progress markers, gc exclusion).
type Repo struct {
	store store.Store
	aead  cipher.AEAD // the repository key itself (version-1 chains); nil when not encrypted
	wrap  cipher.AEAD // the key that seals version-2 chain secrets; nil when not encrypted
	lease time.Duration
	lock  *objectLock // Object Lock of the store (objectlock.go)

	mu      sync.Mutex
	configs map[string]*chainConfig // by chain name, once opened
	states  sync.Map                // state records read or made, by key: never changed (FORMAT.md §7.5)

	hooks *restoreHooks // tests only (export_test.go): nil in use
}

// restoreHooks let tests delay, fail and watch a restore's writes and
// checkpoint flushes (the restore kill interleavings).
type restoreHooks struct {
	write      func(block int64) error // before each block write; an error fails it
	written    func(block int64)       // after each block write
	beforeSync func()                  // before a checkpoint flush's fsync
	afterSync  func(err error)         // after it
	buffers    func(n int)             // block buffers allocated so far, after each allocation
	flushEvery time.Duration           // least time between periodic checkpoint flushes, if not 0
}

// NewRepo returns a Repo over s. opts.EncryptionKey must be nil (no
// encryption) or 32 bytes (AES-256-GCM); other lengths fail with
// ErrInvalidOptions. Nothing is read from the store until first use; a key
// that does not match a chain is reported then as ErrWrongKey.
func NewRepo(s store.Store, opts RepoOptions) (*Repo, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidOptions)
	}
	r := &Repo{store: s, configs: map[string]*chainConfig{}, lease: opts.LeaseTTL, lock: newObjectLock(s)}
	if r.lease <= 0 {
		r.lease = DefaultLeaseTTL
	}
	if opts.EncryptionKey != nil {
		if len(opts.EncryptionKey) != 32 {
			return nil, fmt.Errorf("%w: encryption key is %d bytes, AES-256 needs 32", ErrInvalidOptions, len(opts.EncryptionKey))
		}
		var err error
		if r.aead, err = newAEAD(opts.EncryptionKey); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
		}
		if r.wrap, err = newAEAD(deriveKey(opts.EncryptionKey, labelSecretWrap)); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
		}
	}
	return r, nil
}

// Store returns the repository's object store.
func (r *Repo) Store() store.Store { return r.store }
