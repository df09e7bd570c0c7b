// Command pause is the CRI sandbox ("pause") process of the test cluster's
// pods: it holds the pod's namespaces open, reaps orphaned children (it is
// PID 1 when the pod shares its PID namespace) and exits on SIGINT/SIGTERM.
// Built locally because the cluster pulls no images from a registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
