// Package e2e holds chainvol's end-to-end tests of backup and restore: a
// real driver on a unix socket over a reflink XFS pool on a loop device,
// volumes formatted and mounted through NodeStageVolume, and backups on the
// embedded file target and on a real S3 server (versitygw). The tests need
// root; they fail rather than skip under CI=true. Run them with
//
//	go test -count=1 -v ./test/e2e/
//
// The package has no non-test code and must never be imported.
package e2e
