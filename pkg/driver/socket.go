package driver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// socketPath returns the filesystem path of a unix endpoint.
func socketPath(endpoint string) string {
	p := strings.TrimPrefix(endpoint, "unix://")
	return strings.TrimPrefix(p, "unix:")
}

// listenUnix listens on the unix socket at path, after removing a stale
// socket file a killed process left there (bind(2) fails with EADDRINUSE
// on an existing file). what names the socket in errors ("socket",
// "registration socket"). Errors: the removal's or the listen's, wrapped.
func listenUnix(path, what string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale %s %s: %w", what, path, err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return lis, nil
}
