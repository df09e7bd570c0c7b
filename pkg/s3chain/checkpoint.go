package s3chain

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/chainvol/chainvol/internal/durable"
)

// checkpointVersion is the version of the checkpoint file format. Version
// 1 named the destination by path only; such files are ignored.
const checkpointVersion = 2

// checkpointFile is the JSON of a restore checkpoint: which blocks of which
// backup are durably written to which destination. A checkpoint for
// anything else (another backup, destination or size) is ignored and
// replaced.
type checkpointFile struct {
	checkpointID
	Done []byte `json:"done"` // bitmap, bit i%8 of byte i/8 = block i
}

// checkpointID says which restore a checkpoint belongs to. Destination is
// the path as given; DestinationIdentity says which file or disk was behind
// it (destinationIdentity), so a checkpoint never applies to a recreated
// file or another disk at the same path. The JSON names are those of
// version 2 files ("target", "targetIdentity"), kept so that a checkpoint
// written before the rename still resumes.
type checkpointID struct {
	Version             int    `json:"version"`
	Chain               string `json:"chain"`
	BackupID            string `json:"backupId"`
	VolumeDigest        string `json:"volumeDigest"`
	Destination         string `json:"target"`
	DestinationIdentity string `json:"targetIdentity"`
	SizeBytes           int64  `json:"sizeBytes"`
	BlockSize           int64  `json:"blockSize"`
}

// checkpointer records finished blocks. A block counts as done only after
// the destination was fsynced following its write, so a crash never leaves a
// block marked done that is not on disk.
type checkpointer struct {
	path string
	dest *os.File
	file checkpointFile

	mu        sync.Mutex
	written   []int64 // written since the last flush
	lastFlush time.Time
	// interval is the least time between periodic flushes: a second, or
	// flushSpacing times the last flush's length if that is longer.
	interval time.Duration
	flushing bool // a periodic flush is claimed or running
	flushMu  sync.Mutex
	hooks    *restoreHooks // tests only
}

// flushSpacing bounds the share of a restore spent in periodic checkpoint
// flushes to about 1/flushSpacing. A flush's fsync of the destination
// waits for every block written since the last one to reach the disk, and
// on slow storage (the bench's pool: XFS on a loop device over a buffered
// backing file, whose fsync writes out every dirty page of it) it stalls
// the restore's writes meanwhile: at one a second, fsyncs took 38% of
// the wall time of a 644 MiB restore (docs/BENCHMARKS.md, issue 29
// session 7).
const flushSpacing = 10

// loadCheckpoint reads path (if any) and keeps its bitmap when it describes
// the same restore onto the same destination as want; otherwise, and always
// for a fresh destination (one this run created), it starts empty. The bitmap
// is a claim, not a proof: the restore reads back every block it marks done
// before skipping it (restoreJob.verifyDone).
func loadCheckpoint(path string, dest *os.File, want checkpointID, blocks int64, fresh bool) *checkpointer {
	c := &checkpointer{path: path, dest: dest, file: checkpointFile{checkpointID: want}, lastFlush: time.Now(), interval: time.Second}
	c.file.Version = checkpointVersion
	c.file.Done = make([]byte, (blocks+7)/8)
	if path == "" || fresh {
		return c
	}
	if old, ok := readCheckpoint(path); ok && old.checkpointID == c.file.checkpointID && len(old.Done) == len(c.file.Done) {
		c.file.Done = old.Done
	}
	return c
}

// readCheckpoint parses the checkpoint file at path.
func readCheckpoint(path string) (checkpointFile, bool) {
	var cf checkpointFile
	data, err := os.ReadFile(path)
	return cf, err == nil && json.Unmarshal(data, &cf) == nil
}

// CheckpointFits reports whether the checkpoint file at checkpoint was
// written by a restore onto the very file or disk now at destination (same
// identity, see RestoreOptions.Checkpoint), so that running it again
// resumes rather than overwrites something else.
func CheckpointFits(checkpoint, destination string) bool {
	cf, ok := readCheckpoint(checkpoint)
	return ok && cf.Version == checkpointVersion && cf.Destination == destination && cf.DestinationIdentity != "" &&
		cf.DestinationIdentity == identityOf(destination)
}

// minInterval is the least time between periodic flushes: a second (a
// test may ask for less).
func (c *checkpointer) minInterval() time.Duration {
	if c.hooks != nil && c.hooks.flushEvery > 0 {
		return c.hooks.flushEvery
	}
	return time.Second
}

func (c *checkpointer) isDone(i int64) bool { return c.file.Done[i/8]&(1<<(i%8)) != 0 }

// undo marks block i as not done: its bytes on the destination are not the
// backup's. Only called before this run writes anything.
func (c *checkpointer) undo(i int64) {
	c.mu.Lock()
	c.file.Done[i/8] &^= 1 << (i % 8)
	c.mu.Unlock()
}

// markWritten notes block i as written; it becomes done at the next flush.
// The caller that finds a periodic flush due claims it, so the workers
// never run flushes back to back (each would fsync again).
func (c *checkpointer) markWritten(i int64) {
	c.mu.Lock()
	c.written = append(c.written, i)
	due := c.path != "" && !c.flushing && time.Since(c.lastFlush) > c.interval
	c.flushing = c.flushing || due
	c.mu.Unlock()
	if due {
		_ = c.flush() // a failed periodic flush only costs refetching later
		c.mu.Lock()
		c.flushing = false
		c.mu.Unlock()
	}
}

// flush fsyncs the destination, then marks the blocks written before the fsync
// as done and replaces the checkpoint file durably (durable.WriteFile).
func (c *checkpointer) flush() error {
	if c.path == "" {
		return nil
	}
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	c.mu.Lock()
	batch := c.written
	c.written = nil
	c.lastFlush = time.Now()
	c.mu.Unlock()
	start := time.Now()
	if h := c.hooks; h != nil && h.beforeSync != nil {
		h.beforeSync()
	}
	err := c.dest.Sync()
	if h := c.hooks; h != nil && h.afterSync != nil {
		h.afterSync(err)
	}
	if err != nil {
		return fmt.Errorf("sync restore destination: %w", err)
	}
	took := time.Since(start)
	c.mu.Lock()
	c.interval = max(c.minInterval(), flushSpacing*took)
	for _, i := range batch {
		c.file.Done[i/8] |= 1 << (i % 8)
	}
	data, err := json.Marshal(&c.file)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if err := durable.WriteFile(c.path, data, 0o600); err != nil {
		return fmt.Errorf("write checkpoint %s: %w", c.path, err)
	}
	return nil
}

// remove deletes the checkpoint after a complete restore, and the
// temporary files of flushes a kill interrupted (chainvolctl's checkpoint
// directories have no sweep).
func (c *checkpointer) remove() {
	if c.path != "" {
		_ = os.Remove(c.path)
		_ = durable.RemoveTemps(c.path)
	}
}
