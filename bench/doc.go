// Command chainvol-bench measures chainvol's backup, restore (full and instant), snapshot and
// clone paths on this machine beside the newest restic (bin/restic, built by
// make bench-deps) and the machine's own limit (a null restore and a null
// backup: the same requests without digests or compression, null.go), all
// in one run, prints the goal table of issue 29 with whether each goal is
// met and whether the run was quiet (load at most 1.5 before it), and
// writes the figures to bench/results/latest.json. `make bench` builds and runs it as root.
//
// Everything is real: a reflink XFS pool on a loop device, the driver binary
// (bin/chainvol-csi) twice, as two nodes with their own pools, driven over
// their CSI sockets, versitygw on loopback with
// one bucket for chainvol and one for restic, and an ext4 volume filled with
// generated files. docs/BENCHMARKS.md records a full run and explains the
// method. The program must never touch anything outside its temporary
// directory, its loop device and the child processes it starts; every one of
// them is undone on exit, also on failure or interruption.
package main
