// Command chainvol-bench measures chainvol's backup, restore, snapshot and
// clone paths on this machine beside restic (Debian's package) and the
// machine's own limit, all in one run, and writes the figures to
// bench/results/latest.json. `make bench` builds and runs it as root.
//
// Everything is real: a reflink XFS pool on a loop device, the driver binary
// (bin/chainvol-csi) driven over its CSI socket, versitygw on loopback with
// one bucket for chainvol and one for restic, and an ext4 volume filled with
// generated files. docs/BENCHMARKS.md records a full run and explains the
// method. The program must never touch anything outside its temporary
// directory, its loop device and the child processes it starts; every one of
// them is undone on exit, also on failure or interruption.
package main
