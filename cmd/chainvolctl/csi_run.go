package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// The shapes of the csi subcommands: each reads its flags, then makes its
// calls on one connection to the driver (f.call), bounded by --timeout.

// csiFunc is a subcommand's work once its flags are read: its calls on c.
type csiFunc func(ctx context.Context, cmd *cobra.Command, argv []string, c *csiClient) error

// csiSession is the RunE of a subcommand that bounds each of its calls
// itself (the retries of create --wait, the pages of list): fn gets the
// command's context.
func (a *app) csiSession(f *csiFlags, fn csiFunc) func(*cobra.Command, []string) error {
	return a.run(func(cmd *cobra.Command, argv []string) error {
		return f.call(cmd.Context(), func(ctx context.Context, c *csiClient) error { return fn(ctx, cmd, argv, c) })
	})
}

// csiCall is the RunE of a subcommand whose calls share one --timeout.
func (a *app) csiCall(f *csiFlags, fn csiFunc) func(*cobra.Command, []string) error {
	return a.csiSession(f, func(ctx context.Context, cmd *cobra.Command, argv []string, c *csiClient) error {
		ctx, cancel := f.withTimeout(ctx)
		defer cancel()
		return fn(ctx, cmd, argv, c)
	})
}

// idCall is the RunE of a subcommand on one id (its argument) that makes
// its call and prints the message fn returns (none when ""), as stage,
// publish and delete do. fn's errors are returned as they are.
func (a *app) idCall(f *csiFlags, fn func(ctx context.Context, c *csiClient, id string) (string, error)) func(*cobra.Command, []string) error {
	return a.csiCall(f, func(ctx context.Context, cmd *cobra.Command, argv []string, c *csiClient) error {
		msg, err := fn(ctx, c, argv[0])
		if err == nil && msg != "" {
			_, err = fmt.Fprintln(cmd.OutOrStdout(), msg)
		}
		return err
	})
}

// csiCreateFlags are the flags the create subcommands share (volume,
// snapshot, group): --param KEY=VALUE, -q, the request's secrets and --wait.
type csiCreateFlags struct {
	params  []string
	quiet   bool
	secrets secretFlags
	wait    waitFlags
}

// add adds them to fs: paramUsage describes --param, noun is what -q
// prints the id of, ready what --wait waits for.
func (r *csiCreateFlags) add(fs *pflag.FlagSet, paramUsage, noun, ready string) {
	fs.StringArrayVar(&r.params, "param", nil, paramUsage)
	fs.BoolVarP(&r.quiet, "quiet", "q", false, "print only the "+noun+" id")
	r.secrets.add(fs)
	r.wait.add(fs, ready)
}

// maps reads the --param flags and the secrets of the request. Errors are
// usage errors that never quote a secret.
func (r *csiCreateFlags) maps() (params, secrets map[string]string, err error) {
	if params, err = keyValues("param", r.params); err != nil {
		return nil, nil, err
	}
	secrets, err = r.secrets.load()
	return params, secrets, err
}

// createWait makes a create call (rpc with req), again under --wait while
// the driver answers Aborted or until ready says the answer is ready, as
// the external-provisioner and external-snapshotter do (w.retry).
func createWait[Q, R any](ctx context.Context, w *waitFlags, f *csiFlags, rpc func(context.Context, Q, ...grpc.CallOption) (R, error),
	req Q, ready func(R) bool) (R, error) {
	var resp R
	err := w.retry(ctx, f, func(ctx context.Context) (bool, error) {
		var err error
		resp, err = rpc(ctx, req)
		return err == nil && ready(resp), err
	})
	return resp, err
}

// emitObject prints an object a call answered (what a create made): its
// id alone with quiet, else m as JSON with -o json, else its table.
func (a *app) emitObject(cmd *cobra.Command, quiet bool, id string, m proto.Message, table func(io.Writer) error) error {
	if quiet {
		_, err := fmt.Fprintln(cmd.OutOrStdout(), id)
		return err
	}
	return a.emitProto(cmd, m, table)
}

// each maps xs through get: the objects of list entries for a table.
func each[E, T any](xs []E, get func(E) T) []T {
	out := make([]T, 0, len(xs))
	for _, x := range xs {
		out = append(out, get(x))
	}
	return out
}

// requiredFlag adds the string flag name, which the command requires.
func requiredFlag(fs *pflag.FlagSet, p *string, name, usage string) {
	fs.StringVar(p, name, "", usage+" (required)")
	_ = cobra.MarkFlagRequired(fs, name)
}
