package lazy

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// A kept FUSE connection outlives its server: the server gives a copy of
// its /dev/fuse descriptor to a process that outlives it (pkg/fdkeep), and
// the kernel keeps the connection while any descriptor of it is open,
// queueing the requests of the file's users until a server reads them
// again. A server that takes the descriptor back (TakeOver) is started
// with the INIT exchange the connection was opened with: go-fuse reads the
// first request as INIT and sizes every later one by what INIT settled,
// but the kernel sends INIT once per connection. So INIT is always
// answered through a socketpair: ServeKept reads the kernel's INIT
// itself, hands it to go-fuse through the pair and passes go-fuse's answer
// on; TakeOver replays the recorded INIT to a new go-fuse server the same
// way and checks that it answers as the first did. Then the pair's end
// that go-fuse reads is replaced (dup3) by the connection's descriptor,
// before go-fuse reads anything more, and a taken-over connection is told
// to send again the requests the dead server had read and not answered
// (FUSE_NOTIFY_RESEND, Linux 6.9).

// ErrTakeOver is TakeOver's error for a kept connection it cannot serve
// (no record of its INIT, or a server that would not answer it as the
// first one did): the caller closes the connection's last descriptor, and
// the file's users get errors instead of waiting for ever.
var ErrTakeOver = errors.New("cannot take over the kept FUSE connection")

// KeptState is what a kept connection needs beside its descriptor to be
// taken over: the INIT exchange and the file's shape. Its JSON is the
// blob pkg/fdkeep keeps.
type KeptState struct {
	InitIn, InitOut []byte
	SizeBytes       int64
	Writable        bool
}

// Kept is a copy of a served connection's /dev/fuse descriptor and its
// state, for the caller to give to a keeper and close.
type Kept struct {
	File *os.File
	Blob []byte // KeptState's JSON
}

// ServeKept is ServeWritable over a connection that can be taken over:
// it returns the server and a Kept copy of its descriptor. Root only
// (mount(2) of /dev/fuse itself). Errors: the mount's, the INIT exchange's.
func ServeKept(im *Image, dir string) (*Server, *Kept, error) {
	if im.rw == nil {
		return nil, nil, fmt.Errorf("serve the lazy image at %s: %w", dir, ErrReadOnly)
	}
	mo := mountOptions(nil, 0)
	fd, err := mountFuse(dir, mo)
	if err != nil {
		return nil, nil, fmt.Errorf("mount the lazy image at %s (FUSE): %w", dir, err)
	}
	init, err := readInit(fd)
	if err == nil {
		// go-fuse's answer goes to the kernel before go-fuse reads the
		// connection itself.
		var out []byte
		pass := func(o []byte) error { out = o; return writeAll(fd, o) }
		var srv *Server
		if srv, err = startOn(im, fd, dir, init, mo, pass); err == nil {
			return keptServer(srv, fd, KeptState{InitIn: init, InitOut: out, SizeBytes: im.SizeBytes(), Writable: true})
		}
	}
	_ = unix.Unmount(dir, unix.MNT_DETACH) // ends a server started on it
	unix.Close(fd)
	return nil, nil, fmt.Errorf("serve the lazy image at %s (FUSE INIT): %w", dir, err)
}

// keptServer starts srv's loops and returns it with fd as the Kept copy,
// the caller's to give away and close (srv reads its own copy, made by
// startOn's dup3).
func keptServer(srv *Server, fd int, st KeptState) (*Server, *Kept, error) {
	blob, _ := json.Marshal(st)
	srv.blob = blob
	go srv.srv.Serve()
	return srv, &Kept{File: os.NewFile(uintptr(fd), "/dev/fuse"), Blob: blob}, nil
}

// TakeOver serves b on the kept connection f (its descriptor, which
// TakeOver keeps open only while it starts) with the state blob it was
// kept with; dir is where the connection is mounted. b must be of the
// kept size and writability. Errors: ErrTakeOver.
func TakeOver(b Served, f *os.File, blob []byte, dir string) (*Server, error) {
	st, err := parseKept(blob, dir)
	if err != nil {
		return nil, err
	}
	if st.SizeBytes != b.SizeBytes() || st.Writable != b.Writable() {
		return nil, fmt.Errorf("%w at %s: kept for a file of %d bytes (writable %t), not %d (%t)", ErrTakeOver, dir, st.SizeBytes, st.Writable, b.SizeBytes(), b.Writable())
	}
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %w", ErrTakeOver, dir, err)
	}
	defer unix.Close(fd)
	if aborted(fd) {
		// Unmounted before its server died (a NodeUnstageVolume killed
		// between the unmount and the keeper's Drop): nothing will ever
		// come through it, and a server of it would end at once.
		return nil, fmt.Errorf("%w at %s: the connection was aborted (unmounted)", ErrTakeOver, dir)
	}
	same := func(out []byte) error {
		if !bytes.Equal(out, st.InitOut) {
			return errors.New("this server answers INIT otherwise than the one it was kept from (another version?)")
		}
		return nil
	}
	srv, err := startOn(b, fd, dir, st.InitIn, mountOptions(nil, 0), same)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %w", ErrTakeOver, dir, err)
	}
	srv.blob = blob
	if err := notifyResend(fd); err != nil {
		logf("take over %s: FUSE_NOTIFY_RESEND: %v (requests the dead server had read wait for ever)", dir, err)
	}
	go srv.srv.Serve()
	return srv, nil
}

// parseKept reads the state blob of a connection kept at dir. Errors:
// ErrTakeOver for a blob without an INIT exchange.
func parseKept(blob []byte, dir string) (KeptState, error) {
	var st KeptState
	if err := json.Unmarshal(blob, &st); err != nil || len(st.InitIn) == 0 {
		return st, fmt.Errorf("%w at %s: no record of its INIT", ErrTakeOver, dir)
	}
	return st, nil
}

// startOn starts a go-fuse server of b for the connection fd: INIT (init,
// the kernel's request) goes to it through a socketpair, and its answer
// to check; if check accepts it, the pair's end the server reads is made
// a copy of fd. The server's loops are not started. On an error nothing
// of the server is left but a loop that ends at once.
func startOn(b Served, fd int, dir string, init []byte, mo fuse.MountOptions, check func(out []byte) error) (*Server, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ours, theirs := pair[0], pair[1]
	defer unix.Close(ours)
	if err := writeAll(ours, init); err != nil {
		unix.Close(theirs)
		return nil, err
	}
	// go-fuse owns theirs from here ("/dev/fd/N": an open connection).
	srv, err := fuse.NewServer(newRawFS(b), fmt.Sprintf("/dev/fd/%d", theirs), &mo)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 4096)
	n, err := unix.Read(ours, out)
	if err == nil {
		err = check(out[:n])
	}
	if err == nil {
		err = unix.Dup3(fd, theirs, unix.O_CLOEXEC)
	}
	if err != nil {
		go srv.Serve() // reads the pair's end: fails once ours is closed
		return nil, err
	}
	return &Server{srv: srv, dir: dir, kept: true, conn: theirs}, nil
}

// Kept returns a new copy of a kept server's connection and its state,
// for a keeper that restarted and forgot it. The caller must hold off
// Unmount meanwhile (go-fuse closes the descriptor once unmounted).
// Errors: a server not kept; a descriptor that is no longer /dev/fuse.
func (s *Server) Kept() (*Kept, error) {
	if !s.kept {
		return nil, fmt.Errorf("the lazy image at %s is not served over a kept connection", s.dir)
	}
	fd, err := unix.FcntlInt(uintptr(s.conn), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("copy the FUSE connection of %s: %w", s.dir, err)
	}
	var st, dev unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || unix.Stat("/dev/fuse", &dev) != nil || st.Rdev != dev.Rdev || st.Mode&unix.S_IFMT != unix.S_IFCHR {
		unix.Close(fd)
		return nil, fmt.Errorf("copy the FUSE connection of %s: the server's descriptor is no longer /dev/fuse", s.dir)
	}
	return &Kept{File: os.NewFile(uintptr(fd), "/dev/fuse"), Blob: s.blob}, nil
}

// mountFuse opens /dev/fuse and mounts it at dir as go-fuse's direct
// mount does (mount(2), root), returning the connection's descriptor.
func mountFuse(dir string, mo fuse.MountOptions) (int, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return -1, err
	}
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	data := []string{fmt.Sprintf("fd=%d", fd), fmt.Sprintf("rootmode=%o", st.Mode&syscall.S_IFMT),
		fmt.Sprintf("user_id=%d", os.Geteuid()), fmt.Sprintf("group_id=%d", os.Getegid()), fmt.Sprintf("max_read=%d", mo.MaxWrite)}
	data = append(data, mo.Options...)
	if err := unix.Mount(mo.FsName, dir, "fuse."+mo.Name, mo.DirectMountFlags, strings.Join(data, ",")); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// readInit reads the connection's first request, which is INIT.
func readInit(fd int) ([]byte, error) {
	buf := make([]byte, 64<<10) // the kernel refuses a read under 8 KiB
	n, err := unix.Read(fd, buf)
	if err != nil {
		return nil, fmt.Errorf("read INIT: %w", err)
	}
	const opInit = 26 // FUSE_INIT, fuse(4)
	if n < 40 || binary.LittleEndian.Uint32(buf[4:8]) != opInit {
		return nil, fmt.Errorf("the first request (%d bytes) is not INIT", n)
	}
	return buf[:n], nil
}

// aborted reports whether the FUSE connection fd was aborted (its mount
// unmounted, or aborted through fusectl): /dev/fuse polls POLLERR then.
func aborted(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	_, err := unix.Poll(p, 0)
	return err == nil && p[0].Revents&unix.POLLERR != 0
}

// notifyResend asks the kernel to queue again every request of the
// connection that a server read and did not answer: fuse_out_header with
// unique 0 and the notification's code, FUSE_NOTIFY_RESEND (7), in its
// error field (go-fuse's NOTIFY_RESEND is the negated code).
func notifyResend(fd int) error {
	code := -int32(fuse.NOTIFY_RESEND)
	var h [16]byte
	binary.LittleEndian.PutUint32(h[0:4], uint32(len(h)))
	binary.LittleEndian.PutUint32(h[4:8], uint32(code))
	return writeAll(fd, h[:])
}

func writeAll(fd int, p []byte) error {
	n, err := unix.Write(fd, p)
	if err == nil && n != len(p) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(p))
	}
	return err
}
