package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// envEndpoint overrides the default of --endpoint.
const envEndpoint = "CHAINVOL_CSI_ENDPOINT"

// csiClient is a connection to the driver's socket with its services.
type csiClient struct {
	conn     *grpc.ClientConn
	identity csi.IdentityClient
	ctrl     csi.ControllerClient
	node     csi.NodeClient
	group    csi.GroupControllerClient
	meta     csi.SnapshotMetadataClient
}

// csiFlags are the flags shared by every csi subcommand.
type csiFlags struct {
	endpoint string
	timeout  time.Duration
}

func (a *app) newCSICmd() *cobra.Command {
	f := &csiFlags{}
	cmd := parentCmd(&cobra.Command{
		Use:   "csi",
		Short: "Call the driver's CSI services on a node's socket (debugging)",
		Long: `A small CSI client for debugging a node: it calls the chainvol driver's
Identity, Controller and Node services over its unix socket, as the
external-provisioner, external-snapshotter and kubelet would. Volumes are
created with no topology or with the node's own (--node-topology): chainvol
volumes are local to the node that serves the socket.`,
		Example: `  chainvolctl csi --endpoint unix:///var/lib/kubelet/plugins/chainvol.csi.io/csi.sock info
  chainvolctl csi volume create data --size 1Gi --fs-type ext4 -q
  chainvolctl csi volume create restored --size 1Gi --param fromBackup=demo/data@latest --wait`,
	}, a.newCSIInfoCmd(f), a.newCSIVolumeCmd(f), a.newCSISnapshotCmd(f), a.newCSIGroupCmd(f), a.newCSIStageCmd(f),
		a.newCSIUnstageCmd(f), a.newCSIPublishCmd(f), a.newCSIUnpublishCmd(f), a.newCSIStatsCmd(f), a.newCSIMetadataCmd(f))
	def := os.Getenv(envEndpoint)
	if def == "" {
		def = "unix:///csi/csi.sock"
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.endpoint, "endpoint", def, "the driver's CSI endpoint, unix:///path (env "+envEndpoint+")")
	pf.DurationVar(&f.timeout, "timeout", 2*time.Minute, "timeout of each CSI call")
	return cmd
}

// dial connects to the endpoint; gRPC connects lazily, so a wrong path
// shows up on the first call as Unavailable.
func (f *csiFlags) dial() (*csiClient, error) {
	if !strings.HasPrefix(f.endpoint, "unix:") {
		return nil, usagef("--endpoint %q must be a unix socket, unix:///path", f.endpoint)
	}
	conn, err := grpc.NewClient(f.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", f.endpoint, err)
	}
	return &csiClient{conn: conn, identity: csi.NewIdentityClient(conn), ctrl: csi.NewControllerClient(conn),
		node: csi.NewNodeClient(conn), group: csi.NewGroupControllerClient(conn),
		meta: csi.NewSnapshotMetadataClient(conn)}, nil
}

// call runs one CSI call with the per-call timeout; fn gets the client.
func (f *csiFlags) call(ctx context.Context, fn func(ctx context.Context, c *csiClient) error) error {
	c, err := f.dial()
	if err != nil {
		return err
	}
	defer c.conn.Close()
	return fn(ctx, c)
}

// withTimeout bounds one RPC.
func (f *csiFlags) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.timeout)
}

// printProto prints a CSI message as indented JSON with the proto field
// names (volume_id ...), as in the CSI spec; stable for scripts.
func (a *app) printProto(cmd *cobra.Command, m proto.Message) error {
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	// protojson varies its whitespace on purpose; Indent normalises it.
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err = cmd.OutOrStdout().Write(buf.Bytes())
	return err
}

// keyValues parses repeated k=v flags into a map. Its error never quotes
// the argument, which may be a secret.
func keyValues(flag string, kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for i, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--%s number %d must be KEY=VALUE", flag, i+1)
		}
		m[k] = v
	}
	return m, nil
}
