// Package deploy holds chainvol's Kubernetes manifests (kustomize bases in
// base/, examples in examples/), the image build script and the tests that
// keep them honest: every manifest decodes strictly into the real API types,
// and the cross-references an operator would otherwise discover on a live
// cluster (driver name, chainvol-csi flags, socket paths, volume mounts,
// RBAC, secrets, class names) are checked against each other and against the
// chainvol-csi binary built from this tree.
//
// The package has no non-test code and must never gain any: nothing imports
// it, and the manifests are data, not Go.
package deploy
