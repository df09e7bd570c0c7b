package driver

import (
	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// Where volumes and snapshots can be used. A volume lives in one node's
// pool and is accessible from that node only ({TopologyKey: node id}, the
// segment NodeGetInfo reports). A local (reflink) snapshot shares its
// volume's blocks, so a volume made from it can be made on that node only:
// it reports the same segment. A backup restores on any node that reaches
// its target, so it reports none: CSI 1.13 "Snapshot": "If it is not
// specified, the CO MAY assume the snapshot is equally usable from all
// topologies in the cluster" (SNAPSHOT_ACCESSIBILITY_CONSTRAINTS, an alpha
// plugin capability, identity.go).

// requireHere returns nil when requirement tr lets this node hold what
// is asked (what: "volumes", "local snapshots"): no requisite, or a
// requisite topology whose TopologyKey segment names this node (CSI spec
// "TopologyRequirement": the result MUST be accessible from at least one
// requisite topology; preferred ones only order the choice). Otherwise
// ClassElsewhere (ResourceExhausted).
func (d *core) requireHere(tr *csi.TopologyRequirement, what string) error {
	if len(tr.GetRequisite()) == 0 {
		return nil
	}
	for _, t := range tr.GetRequisite() {
		if v, ok := t.GetSegments()[TopologyKey]; ok && v == d.opts.NodeID {
			return nil
		}
	}
	return volume.Refuse(volume.ClassElsewhere, "requisite topology excludes this node: %s of %s are local to node %q (%s=%s)",
		what, d.opts.DriverName, d.opts.NodeID, TopologyKey, d.opts.NodeID)
}

// localTopology is the accessible topology of a volume or local snapshot
// of this node: its own segment.
func (d *core) localTopology() []*csi.Topology { return []*csi.Topology{d.topology()} }

// localCSISnapshot describes a local (reflink) snapshot lvol: ready, and
// usable from this node only.
func (d *core) localCSISnapshot(lv backend.LVol) *csi.Snapshot {
	s := csiSnapshot(lv, true)
	s.AccessibleTopology = d.localTopology()
	return s
}

// sourceElsewhere returns the refusal of a clone or local-snapshot restore
// whose source (kind, id) is missing from this node's pool, when the CO
// placed the request by topology (tr has requisite or preferred
// topologies): ClassElsewhere (ResourceExhausted), since in a cluster the
// source is another node's and only that node can reflink it;
// external-provisioner then gives the claim back to the scheduler. It is
// nil without topology (a CO that does not schedule: csi-sanity,
// chainvolctl), where the caller answers NotFound (CSI spec "CreateVolume
// Errors": the source does not exist).
func (d *core) sourceElsewhere(tr *csi.TopologyRequirement, kind backend.Kind, id string) error {
	if len(tr.GetRequisite()) == 0 && len(tr.GetPreferred()) == 0 {
		return nil
	}
	return volume.Refuse(volume.ClassElsewhere, "content source %s %s is not in the pool of node %q: a clone or a local snapshot's restore is made on the node that holds its source (the %s of its PersistentVolume's node affinity); run the claim's pod there, or restore from a backup on any node",
		kind, id, d.opts.NodeID, TopologyKey)
}
