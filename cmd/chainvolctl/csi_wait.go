package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// waitFlags make a create call wait like the external-provisioner and
// external-snapshotter do: the driver answers Aborted (with a progress
// message) while a long restore or backup runs, and the sidecar retries
// the same idempotent call until it succeeds.
type waitFlags struct {
	wait     bool
	timeout  time.Duration
	interval time.Duration
}

func (w *waitFlags) add(fs *pflag.FlagSet, what string) {
	fs.BoolVar(&w.wait, "wait", false, "retry while the driver answers Aborted, printing its progress message, until "+what)
	fs.DurationVar(&w.timeout, "wait-timeout", 10*time.Minute, "give up waiting after this long")
	fs.DurationVar(&w.interval, "wait-interval", 2*time.Second, "pause between retries")
}

// retry calls fn (one RPC, with its own timeout) and, with --wait, calls it
// again after Aborted or when done reports false, until success or timeout.
func (w *waitFlags) retry(ctx context.Context, f *csiFlags, fn func(ctx context.Context) (done bool, err error)) error {
	deadline := time.Now().Add(w.timeout)
	for {
		cctx, cancel := f.withTimeout(ctx)
		done, err := fn(cctx)
		cancel()
		st, _ := status.FromError(err)
		switch {
		case err == nil && (done || !w.wait):
			return nil
		case err != nil && (!w.wait || st.Code() != codes.Aborted):
			return explainCSI(err)
		}
		msg := "not ready yet (ready_to_use is false)"
		if err != nil {
			msg = st.Message()
		}
		fmt.Fprintf(os.Stderr, "%s waiting: %s\n", time.Now().Format("15:04:05"), msg)
		if time.Now().After(deadline) {
			return fmt.Errorf("still not ready after --wait-timeout %v: %s", w.timeout, msg)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(w.interval):
		}
	}
}

// explainCSI adds what to do for the codes an operator meets most.
func explainCSI(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	hint := map[codes.Code]string{
		codes.Unavailable:   "is the driver running, and is --endpoint its socket?",
		codes.Aborted:       "another operation on this volume is in progress; retry, or pass --wait",
		codes.Unimplemented: "this driver build does not implement the call",
	}[st.Code()]
	if hint == "" {
		return fmt.Errorf("%s: %s", st.Code(), st.Message())
	}
	return fmt.Errorf("%s: %s\nhint: %s", st.Code(), st.Message(), hint)
}
