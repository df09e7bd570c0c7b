package s3chain

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"sync"
)

// Repo is a backup repository: the chains kept in one Store. Its methods
// are safe for concurrent use; the caller serialises operations on one
// chain (one backup, restore-during-delete and GC rules: FORMAT.md §7).
type Repo struct {
	store Store
	aead  cipher.AEAD // nil when the repository is not encrypted

	mu      sync.Mutex
	configs map[string]*chainConfig // by chain name, once opened
}

// NewRepo returns a Repo over store. opts.EncryptionKey must be nil (no
// encryption) or 32 bytes (AES-256-GCM); other lengths fail with
// ErrInvalidOptions. Nothing is read from the store until first use; a key
// that does not match a chain is reported then as ErrWrongKey.
func NewRepo(store Store, opts RepoOptions) (*Repo, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidOptions)
	}
	r := &Repo{store: store, configs: map[string]*chainConfig{}}
	if opts.EncryptionKey != nil {
		if len(opts.EncryptionKey) != 32 {
			return nil, fmt.Errorf("%w: encryption key is %d bytes, AES-256 needs 32", ErrInvalidOptions, len(opts.EncryptionKey))
		}
		block, err := aes.NewCipher(opts.EncryptionKey)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
		}
		if r.aead, err = cipher.NewGCM(block); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
		}
	}
	return r, nil
}

// Store returns the repository's object store.
func (r *Repo) Store() Store { return r.store }
