package fdkeep

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// Client calls the keeper listening at Path. Each call is one connection
// and one request; none is retried.
type Client struct {
	Path string
}

// callTimeout bounds one call: the keeper answers from memory.
const callTimeout = 5 * time.Second

// Put gives the keeper a copy of fd under key, with blob (at most a few
// KiB) beside it, replacing what it held under key (closing that).
// Errors: the keeper unreachable or refusing.
func (c Client) Put(ctx context.Context, key string, fd int, blob []byte) error {
	_, _, err := c.call(ctx, request{Op: "put", Key: key, Blob: blob}, fd)
	return err
}

// Get returns a copy of the descriptor kept under key, as an *os.File the
// caller owns, and its blob. Errors: ErrNotKept, or the keeper unreachable.
func (c Client) Get(ctx context.Context, key string) (*os.File, []byte, error) {
	rep, fd, err := c.call(ctx, request{Op: "get", Key: key}, -1)
	if err != nil {
		return nil, nil, err
	}
	if rep.NotFound || fd < 0 {
		closeFD(fd)
		return nil, nil, fmt.Errorf("key %s: %w", key, ErrNotKept)
	}
	return os.NewFile(uintptr(fd), "kept:"+key), rep.Blob, nil
}

// Drop closes what the keeper holds under key; nothing held is success.
func (c Client) Drop(ctx context.Context, key string) error {
	_, _, err := c.call(ctx, request{Op: "drop", Key: key}, -1)
	return err
}

// Keys lists the keys the keeper holds descriptors under, sorted.
func (c Client) Keys(ctx context.Context) ([]string, error) {
	rep, _, err := c.call(ctx, request{Op: "keys"}, -1)
	return rep.Keys, err
}

// call sends req (with fd when >= 0) and reads the reply and the
// descriptor it carries (-1 for none).
func (c Client) call(ctx context.Context, req request, fd int) (reply, int, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unixpacket", c.Path)
	if err != nil {
		return reply{}, -1, fmt.Errorf("descriptor keeper at %s: %w", c.Path, err)
	}
	defer conn.Close()
	uc := conn.(*net.UnixConn)
	if dl, ok := ctx.Deadline(); ok {
		_ = uc.SetDeadline(dl)
	}
	if err := send(uc, req, fd); err != nil {
		return reply{}, -1, fmt.Errorf("descriptor keeper at %s: %s: %w", c.Path, req.Op, err)
	}
	var rep reply
	got, err := recv(uc, &rep)
	if err != nil {
		return reply{}, -1, fmt.Errorf("descriptor keeper at %s: %s: %w", c.Path, req.Op, err)
	}
	if rep.Err != "" {
		closeFD(got)
		return reply{}, -1, fmt.Errorf("descriptor keeper at %s: %s: %w", c.Path, req.Op, errors.New(rep.Err))
	}
	return rep, got, nil
}
