// Package fdkeep keeps open file descriptors for a process that may die and
// start again: the keeper (Serve) is a small process of its own that holds,
// under a key, a descriptor given to it over a unix socket (SCM_RIGHTS,
// unix(7)) with a few bytes beside it, and gives a copy back on request.
//
// chainvol's node plugin gives it the /dev/fuse descriptor of every
// volume it serves over FUSE while that volume hydrates (issue 27): the
// kernel keeps a FUSE connection alive while any process holds its
// descriptor, so a restarted driver takes the descriptor back and serves
// the volume again, and the application's I/O waits for the restart
// instead of failing (docs/ARCHITECTURE.md, "Driver restarts").
//
// The keeper never reads or writes the descriptors it holds, and must
// never run inside the container it keeps descriptors for: a container
// restart ends every process in it. It keeps nothing on disk: a keeper
// restart forgets everything (the driver gives a descriptor, Client.Put,
// each time it serves a volume, and again every few seconds while the
// keeper lacks it).
package fdkeep
