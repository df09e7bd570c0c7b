// Package lazy serves a backup's volume image as a file whose blocks are
// fetched from the backup target on first read, each verified against its
// digest like any restored block (s3chain.BlockReader), and kept in a local
// cache file so that it is fetched once: the lazy layer of issue 27.
//
// Image is the block cache and its rules (io.ReaderAt over a Source);
// Serve puts an Image behind FUSE as one read-only file, which a read-only
// loop device turns into a disk (Attach), and MountFS mounts the backup's
// filesystem from it without journal replay. OpenWritable is the image of
// an instant restore: its cache is the volume's data file, it takes
// writes, Flush makes them durable and writes the hydration record, and
// Hydrate fetches the rest in the background (ServeWritable,
// AttachWritable put it behind FUSE and a read-write loop device). The
// crash and fault rules are
// in docs/ARCHITECTURE.md ("The lazy layer").
//
// Units: offsets and sizes are bytes; block indices count blocks of
// Source.BlockSize bytes from 0.
package lazy
