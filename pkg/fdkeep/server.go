package fdkeep

import (
	"context"
	"errors"
	"net"
	"os"
	"sort"
	"sync"
	"syscall"
)

// Keeper holds descriptors by key; Serve answers clients with it.
type Keeper struct {
	mu   sync.Mutex
	kept map[string]entry
}

type entry struct {
	fd   int
	blob []byte
}

// Listen removes a socket left at path by an earlier keeper and listens
// there (SOCK_SEQPACKET, mode 0600: only root's driver may talk to it).
func Listen(path string) (*net.UnixListener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Serve answers every connection on l, one request each, until ctx ends
// or l fails; it then closes l (the descriptors stay kept until Close).
func (k *Keeper) Serve(ctx context.Context, l *net.UnixListener) error {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go k.answer(c)
	}
}

// answer reads one request from c and answers it.
func (k *Keeper) answer(c *net.UnixConn) {
	defer c.Close()
	var req request
	fd, err := recv(c, &req)
	if err != nil {
		return
	}
	// One lock over the answer and its send: a descriptor being sent is
	// never closed (and its number reused) by a drop beside it.
	k.mu.Lock()
	defer k.mu.Unlock()
	var rep reply
	out := -1
	switch req.Op {
	case "put":
		if fd < 0 {
			rep.Err = "put without a descriptor"
			break
		}
		k.put(req.Key, fd, req.Blob)
		fd = -1
	case "get":
		if e, ok := k.kept[req.Key]; ok {
			rep.Blob, out = e.blob, e.fd
		} else {
			rep.NotFound = true
		}
	case "drop":
		k.drop(req.Key)
	case "keys":
		rep.Keys = k.keys()
	default:
		rep.Err = "unknown op " + req.Op
	}
	closeFD(fd)
	_ = send(c, rep, out)
}

// put, drop and keys run under k.mu.
func (k *Keeper) put(key string, fd int, blob []byte) {
	if k.kept == nil {
		k.kept = map[string]entry{}
	}
	if old, ok := k.kept[key]; ok {
		syscall.Close(old.fd)
	}
	k.kept[key] = entry{fd: fd, blob: blob}
}

func (k *Keeper) drop(key string) {
	if e, ok := k.kept[key]; ok {
		syscall.Close(e.fd)
		delete(k.kept, key)
	}
}

func (k *Keeper) keys() []string {
	keys := make([]string, 0, len(k.kept))
	for key := range k.kept {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

// Close closes every kept descriptor: a FUSE connection that no server
// holds any more is aborted by the kernel.
func (k *Keeper) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, e := range k.kept {
		syscall.Close(e.fd)
		delete(k.kept, key)
	}
}
