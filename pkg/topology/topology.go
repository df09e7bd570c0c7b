// Package topology names the topology segment chainvol volumes are
// constrained by. It is a leaf (no imports), so that the driver and the
// operator CLI share the key without the CLI importing the driver.
package topology

// Key is the topology segment key whose value is a node id: every lvol
// lives on one node's pool, so a volume is accessible from exactly the node
// NodeGetInfo reports with {Key: nodeID}, and Kubernetes turns that into
// the PV's node affinity.
//
// Source of its shape: the CSI spec, message Topology (csi.proto): a key is
// an optional prefix and a name separated by "/"; the name is at most 63
// characters of [A-Za-z0-9] with '-', '_' or '.' inside; the prefix is at
// most 63 characters of [a-z0-9] with '-' or '.' inside, in domain name
// notation (RFC 1035 §2.3.1), should name the plugin, and must be the same
// for every key the plugin returns. Each value (here the node id) must be
// at most 63 characters and begin and end with an alphanumeric; the driver
// refuses a longer -node-id at start-up.
const Key = "topology.chainvol.csi.io/node"
