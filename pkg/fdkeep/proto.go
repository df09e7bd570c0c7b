package fdkeep

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"syscall"
)

// ErrNotKept is Client.Get's answer for a key the keeper holds nothing
// under.
var ErrNotKept = errors.New("no descriptor kept under this key")

// request is one call: Op "put" (with one descriptor), "get", "drop" or
// "keys".
type request struct {
	Op   string `json:"op"`
	Key  string `json:"key,omitempty"`
	Blob []byte `json:"blob,omitempty"`
}

// reply answers a request; a "get" reply that found the key carries the
// descriptor.
type reply struct {
	Err      string   `json:"err,omitempty"`
	NotFound bool     `json:"notFound,omitempty"`
	Blob     []byte   `json:"blob,omitempty"`
	Keys     []string `json:"keys,omitempty"`
}

// maxMessage bounds one message (a request's blob is a few hundred bytes:
// the FUSE INIT exchange and an image's size).
const maxMessage = 64 << 10

// send writes v as one SOCK_SEQPACKET message, with fd as its SCM_RIGHTS
// when fd >= 0.
func send(c *net.UnixConn, v any, fd int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var oob []byte
	if fd >= 0 {
		oob = syscall.UnixRights(fd)
	}
	_, _, err = c.WriteMsgUnix(b, oob, nil)
	return err
}

// recv reads one message into v and returns the descriptor it carried, or
// -1. A message with more than one descriptor keeps the first and closes
// the rest.
func recv(c *net.UnixConn, v any) (int, error) {
	buf := make([]byte, maxMessage)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return -1, err
	}
	fd := -1
	if oobn > 0 {
		msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return -1, fmt.Errorf("control message: %w", err)
		}
		for _, m := range msgs {
			fds, err := syscall.ParseUnixRights(&m)
			if err != nil {
				continue
			}
			for _, f := range fds {
				if fd < 0 {
					fd = f
				} else {
					syscall.Close(f)
				}
			}
		}
	}
	if n == 0 {
		closeFD(fd)
		return -1, errors.New("empty message")
	}
	if err := json.Unmarshal(buf[:n], v); err != nil {
		closeFD(fd)
		return -1, fmt.Errorf("decode message: %w", err)
	}
	return fd, nil
}

func closeFD(fd int) {
	if fd >= 0 {
		syscall.Close(fd)
	}
}
