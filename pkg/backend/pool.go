package backend

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors returned (wrapped with %w) by every Pool implementation.
// The driver maps each to one gRPC code (see pkg/driver/errors.go).
var (
	// ErrNotFound: no lvol with that id or name exists.
	ErrNotFound = errors.New("lvol not found")
	// ErrExists: an lvol with that name exists but with other attributes
	// (size, kind or source), so the request cannot be idempotently satisfied.
	ErrExists = errors.New("lvol already exists with other attributes")
	// ErrNoSpace: the pool cannot hold the requested size.
	ErrNoSpace = errors.New("pool has not enough free space")
	// ErrInvalid: a malformed id, name, size or option.
	ErrInvalid = errors.New("invalid lvol request")
)

// Kind separates volumes from snapshots; names are unique per kind.
type Kind string

const (
	// KindVolume is a writable lvol that the driver exposes as a CSI volume.
	KindVolume Kind = "volume"
	// KindSnapshot is a read-only point-in-time reflink copy of another lvol.
	KindSnapshot Kind = "snapshot"
)

// LVol is the metadata of one logical volume as the pool records it.
// Only whole lvols are ever returned: one whose data file is fully made.
type LVol struct {
	// ID is pool-unique, matches IDPattern, at most 64 bytes; it is safe to
	// use as a path element.
	ID string `json:"id"`
	// Name is the caller's idempotency name (the CSI request name), unique per Kind.
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// SizeBytes is the logical (apparent) size of the lvol in bytes.
	SizeBytes int64 `json:"sizeBytes"`
	// SourceID is the id of the lvol this one was cloned or snapshotted from, or "".
	SourceID  string    `json:"sourceID,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// Labels are free-form key/value metadata owned by the caller (fsType,
	// PVC name, restore state ...). The pool never interprets them.
	Labels map[string]string `json:"labels,omitempty"`
}

// CreateOptions describe a new lvol.
type CreateOptions struct {
	Name string
	Kind Kind
	// SizeBytes is the logical size; for a clone it must be >= the source's
	// size (0 means the source's size). Rounded up to a multiple of 4096.
	SizeBytes int64
	// SourceID, when set, makes the new lvol a reflink copy (or, on a pool
	// without reflink, a full copy) of that lvol's data.
	SourceID string
	Labels   map[string]string
}

// Capacity is the pool's space in bytes, from statfs of the pool directory.
type Capacity struct {
	TotalBytes     int64
	AvailableBytes int64
}

// Pool is the node-local store of lvols. Implementations must be safe for
// concurrent use and crash-safe: after a crash at any point a reopened pool
// lists either no lvol or a whole one, and leaves no orphan data files.
type Pool interface {
	// Create makes a new lvol, or returns the existing one when an lvol of
	// the same Kind and Name exists with the same SizeBytes and SourceID
	// (idempotency). Errors: ErrExists (same name, other attributes),
	// ErrNotFound (SourceID unknown), ErrNoSpace, ErrInvalid.
	Create(ctx context.Context, opts CreateOptions) (LVol, error)
	// Get returns the lvol with that id. Errors: ErrNotFound (also for a
	// malformed id: such an id never reaches the filesystem).
	Get(ctx context.Context, id string) (LVol, error)
	// GetByName returns the lvol of that kind and name. Errors: ErrNotFound.
	GetByName(ctx context.Context, kind Kind, name string) (LVol, error)
	// List returns all whole lvols of a kind ("" for all), sorted by ID.
	List(ctx context.Context, kind Kind) ([]LVol, error)
	// Delete removes the lvol's record and data. Errors: ErrNotFound.
	Delete(ctx context.Context, id string) error
	// Resize grows the lvol to newSize bytes (rounded up to 4096); a smaller
	// or equal size is a no-op returning the current lvol. Errors: ErrNotFound, ErrNoSpace.
	Resize(ctx context.Context, id string, newSize int64) (LVol, error)
	// SetLabels merges labels into the lvol's labels (an empty value deletes
	// a key) atomically and returns the updated lvol. Errors: ErrNotFound.
	SetLabels(ctx context.Context, id string, labels map[string]string) (LVol, error)
	// DataPath returns the absolute path of the lvol's data file. Errors: ErrNotFound.
	DataPath(id string) (string, error)
	// CloneInto reflinks lvol src's data over unwritten lvol dst's, holes
	// punched beyond size bytes (clone_into.go). Errors: ErrNotFound,
	// ErrInvalid (dst written), the filesystem's (no reflink).
	CloneInto(src, dst string, size int64) error
	// Capacity returns the pool's total and available bytes.
	Capacity(ctx context.Context) (Capacity, error)
	// Reflink reports whether clones and snapshots are O(1) reflinks.
	Reflink() bool
	// CoWDebt returns the bytes that rewriting the lvols' shared extents
	// could still allocate (0 without reflink), leaving out the lvols in
	// except. Errors: the metadata's, ctx's, the filesystem's.
	CoWDebt(ctx context.Context, except ...string) (int64, error)
	// Close releases the metadata store.
	Close() error
}
