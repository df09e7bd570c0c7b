package populator

import "testing"

// TestClassify: every failure the issue names gets its reason and its
// permanence, from the texts the provisioner and the csi-snapshotter
// relay (the driver's messages, pkg/volume/rules.go and restore_admit.go).
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		msg       string
		reason    string
		permanent bool
	}{
		{`failed to provision volume with StorageClass "e2e-ext4": rpc error: code = NotFound desc = restore: backup default:app/data-db-2@before:2026-11-29T10:00:00Z: backup not found: chain "app/data-db-2" has no backup created at or before ...`, ReasonBackupNotFound, true},
		{`Failed to check and update snapshot content: failed to list snapshot for content chainvol-prime-x: "can not find snapshot for snapshotID backup:default:app/x@latest"`, ReasonBackupNotFound, true},
		{`rpc error: code = PermissionDenied desc = backup s3:app/x@1: wrong key; give the chain's encryptionKey in the request's secrets`, ReasonCredentials, true},
		{`rpc error: code = Unauthenticated desc = InvalidAccessKeyId`, ReasonCredentials, true},
		{`rpc error: code = Unavailable desc = open backup target s3: dial tcp: connection refused`, ReasonUnreachable, false},
		{`rpc error: code = InvalidArgument desc = backup x holds a xfs filesystem but the request asks for fsType ext4; drop csi.storage.k8s.io/fstype`, ReasonFSTypeConflict, true},
		{`rpc error: code = OutOfRange desc = requested 1073741824 bytes is smaller than backup x of 2147483648 bytes`, ReasonTooSmall, true},
		{`requested volume size 1073741824 is less than the size 2147483648 for the source snapshot prime-x`, ReasonTooSmall, true},
		{`rpc error: code = FailedPrecondition desc = backup x: damaged`, ReasonRestoreFailed, true},
		{`rpc error: code = Aborted desc = restore of pvc-1 in progress: 40% (410 MiB of 1.0 GiB)`, ReasonRestoring, false},
		{`rpc error: code = DeadlineExceeded desc = context deadline exceeded`, ReasonRestoring, false},
		{`error getting handle for DataSource Type VolumeSnapshot by Name prime-x: snapshot prime-x is not Ready`, ReasonRetrying, false},
	} {
		r, p := Classify(c.msg)
		if r != c.reason || p != c.permanent {
			t.Errorf("Classify(%.60q) = %s, %v; want %s, %v", c.msg, r, p, c.reason, c.permanent)
		}
		if p != permanent[r] && r != ReasonRestoring {
			t.Errorf("reason %s: Classify says permanent=%v, the stop table %v", r, p, permanent[r])
		}
	}
}
