package s3chain

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// checkpointVersion is the version of the checkpoint file format.
const checkpointVersion = 1

// checkpointFile is the JSON of a restore checkpoint: which blocks of which
// backup are durably written to which target. A checkpoint for anything
// else (another backup, target or size) is ignored and replaced.
type checkpointFile struct {
	checkpointID
	Done []byte `json:"done"` // bitmap, bit i%8 of byte i/8 = block i
}

// checkpointID says which restore a checkpoint belongs to.
type checkpointID struct {
	Version      int    `json:"version"`
	Chain        string `json:"chain"`
	BackupID     string `json:"backupId"`
	VolumeDigest string `json:"volumeDigest"`
	Target       string `json:"target"`
	SizeBytes    int64  `json:"sizeBytes"`
	BlockSize    int64  `json:"blockSize"`
}

// checkpointer records finished blocks. A block counts as done only after
// the target was fsynced following its write, so a crash never leaves a
// block marked done that is not on disk.
type checkpointer struct {
	path   string
	target *os.File
	file   checkpointFile

	mu        sync.Mutex
	written   []int64 // written since the last flush
	lastFlush time.Time
	flushMu   sync.Mutex
}

// loadCheckpoint reads path (if any) and keeps its bitmap when it describes
// the same restore as want; otherwise it starts empty.
func loadCheckpoint(path string, target *os.File, want checkpointID, blocks int64) *checkpointer {
	c := &checkpointer{path: path, target: target, file: checkpointFile{checkpointID: want}, lastFlush: time.Now()}
	c.file.Version = checkpointVersion
	c.file.Done = make([]byte, (blocks+7)/8)
	if path == "" {
		return c
	}
	var old checkpointFile
	if data, err := os.ReadFile(path); err == nil && json.Unmarshal(data, &old) == nil {
		if old.checkpointID == c.file.checkpointID && len(old.Done) == len(c.file.Done) {
			c.file.Done = old.Done
		}
	}
	return c
}

func (c *checkpointer) isDone(i int64) bool { return c.file.Done[i/8]&(1<<(i%8)) != 0 }

// markWritten notes block i as written; it becomes done at the next flush.
func (c *checkpointer) markWritten(i int64) {
	c.mu.Lock()
	c.written = append(c.written, i)
	due := c.path != "" && time.Since(c.lastFlush) > time.Second
	c.mu.Unlock()
	if due {
		_ = c.flush() // a failed periodic flush only costs refetching later
	}
}

// flush fsyncs the target, then marks the blocks written before the fsync
// as done and atomically replaces the checkpoint file (write, fsync,
// rename).
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
	if err := c.target.Sync(); err != nil {
		return fmt.Errorf("sync restore target: %w", err)
	}
	c.mu.Lock()
	for _, i := range batch {
		c.file.Done[i/8] |= 1 << (i % 8)
	}
	data, err := json.Marshal(&c.file)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return writeCheckpointFile(c.path, data)
}

// remove deletes the checkpoint after a complete restore.
func (c *checkpointer) remove() {
	if c.path != "" {
		_ = os.Remove(c.path)
	}
}

func writeCheckpointFile(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("write checkpoint %s: %w", path, err)
	}
	return nil
}
