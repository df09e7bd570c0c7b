package main

import (
	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// secretFlags are --secret KEY=VALUE and --secrets-file, the secrets map of
// a CSI request (accessKeyID, secretAccessKey, sessionToken, encryptionKey).
type secretFlags struct {
	kvs  []string
	file string
}

func (s *secretFlags) add(fs *pflag.FlagSet) {
	fs.StringArrayVar(&s.kvs, "secret", nil, "request secret KEY=VALUE (accessKeyID, secretAccessKey, sessionToken, encryptionKey); repeatable")
	fs.StringVar(&s.file, "secrets-file", "", "key=value file of request secrets (--secret entries override it)")
}

// load returns the secrets map; values never appear in errors.
func (s *secretFlags) load() (map[string]string, error) {
	m := map[string]string{}
	if s.file != "" {
		sec, err := target.ReadSecretsFile(s.file)
		if err != nil {
			return nil, err
		}
		for k, v := range map[string]string{target.KeyAccessKeyID: sec.AccessKeyID, target.KeySecretAccessKey: sec.SecretAccessKey,
			target.KeySessionToken: sec.SessionToken, target.KeyEncryptionKey: sec.EncryptionKey} {
			if v != "" {
				m[k] = v
			}
		}
	}
	kv, err := keyValues("secret", s.kvs)
	if err != nil {
		return nil, err
	}
	for k, v := range kv {
		m[k] = v
	}
	return m, nil
}

// capFlags describe one volume capability.
type capFlags struct {
	fsType     string
	block      bool
	mode       string
	mountFlags []string
}

func (c *capFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&c.fsType, "fs-type", "", "filesystem of a mount volume: ext4, ext3 or xfs (default: the volume's, else ext4)")
	fs.BoolVar(&c.block, "block", false, "raw block access instead of a mounted filesystem")
	fs.StringVar(&c.mode, "access-mode", "single-node-writer", "single-node-writer, single-node-reader-only, single-node-single-writer or single-node-multi-writer")
	fs.StringSliceVar(&c.mountFlags, "mount-flag", nil, "mount option for a mount volume; repeatable")
}

var accessModes = map[string]csi.VolumeCapability_AccessMode_Mode{
	"single-node-writer":        csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
	"single-node-reader-only":   csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
	"single-node-single-writer": csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
	"single-node-multi-writer":  csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER,
}

// capability builds the CSI capability.
func (c *capFlags) capability() (*csi.VolumeCapability, error) {
	mode, ok := accessModes[c.mode]
	if !ok {
		return nil, usagef("--access-mode %q is not one of single-node-writer, single-node-reader-only, single-node-single-writer, single-node-multi-writer", c.mode)
	}
	vc := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode}}
	if c.block {
		if c.fsType != "" || len(c.mountFlags) > 0 {
			return nil, usagef("--block cannot be combined with --fs-type or --mount-flag")
		}
		vc.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
		return vc, nil
	}
	vc.AccessType = &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: c.fsType, MountFlags: c.mountFlags}}
	return vc, nil
}

// parseSize reads a Kubernetes quantity such as 1Gi or 500M into bytes.
func parseSize(flag, s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		return 0, usagef("--%s %q must be a positive size such as 1Gi, 512Mi or 1073741824", flag, s)
	}
	return q.Value(), nil
}
