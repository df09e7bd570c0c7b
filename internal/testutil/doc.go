// Package testutil holds helpers shared by chainvol's tests: the root and CI
// rules for privileged tests, a real reflink XFS filesystem on a loop device,
// and a real S3 server (versitygw) on loopback. It must never be imported by
// non-test code.
package testutil
