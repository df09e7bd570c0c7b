package volume

import (
	"errors"
	"fmt"
)

// Sentinels of a volume's state on its node and of the node's own
// machinery (loop devices, mounts, filesystems), which pkg/driver's node
// RPCs, freezes and health probes return with what they found (Mark), so
// that the one classification (class.go) decides their class and
// pkg/driver's mappers their code (CSI spec "NodeStageVolume",
// "NodePublishVolume", "NodeGetVolumeStats" error tables).
var (
	// ErrNodeFailed: a loop device, mount, mkdir, statfs or filesystem tool
	// failed on the node: ClassInternal, whatever the cause wraps.
	ErrNodeFailed = errors.New("node operation failed")
	// ErrNotStaged: the call needs the volume staged (NodePublishVolume):
	// ClassPrecondition.
	ErrNotStaged = errors.New("not staged")
	// ErrInUse: the volume is staged or published where the call needs it
	// free (DeleteVolume, a second SINGLE_NODE_SINGLE_WRITER publish, a
	// freeze without reflink): ClassPrecondition.
	ErrInUse = errors.New("in use")
	// ErrIncompatible: what the volume holds or was made for is not what the
	// call asks (another access type or filesystem, no filesystem, a journal
	// to replay, a reader-only device to grow): ClassPrecondition.
	ErrIncompatible = errors.New("incompatible volume")
	// ErrMountConflict: a path holds another mount, or this volume's with
	// other options (CSI spec "Volume published but is incompatible"):
	// ClassExists.
	ErrMountConflict = errors.New("mount conflict")
	// ErrRestoring: a restore still fills the volume, retry when it ends:
	// ClassUnavailable.
	ErrRestoring = errors.New("still being restored")
	// ErrFrozen: the filesystem is frozen by another operation (we cannot
	// know when it thaws): ClassBusy.
	ErrFrozen = errors.New("already frozen")
	// ErrNotAtPath: the volume is not at the path the call names, or not
	// staged on this node (NodeGetVolumeStats, NodeGetVolumeHealth):
	// ClassNotFound.
	ErrNotAtPath = errors.New("volume not at path")
	// ErrPoolNotReady: the pool does not answer (Probe): ClassPrecondition.
	ErrPoolNotReady = errors.New("pool not ready")
)

// marked is an error of kind sentinel with its own message.
type marked struct {
	sentinel error
	err      error
}

func (m *marked) Error() string   { return m.err.Error() }
func (m *marked) Unwrap() []error { return []error{m.sentinel, m.err} }

// Mark returns an error that is sentinel (errors.Is) with the message of
// format filled with args (fmt.Errorf: %w wraps the cause too), for a
// message that already says what the sentinel means.
func Mark(sentinel error, format string, args ...any) error {
	return &marked{sentinel: sentinel, err: fmt.Errorf(format, args...)}
}
