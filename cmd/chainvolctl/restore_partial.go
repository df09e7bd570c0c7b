package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/chainvol/chainvol/internal/durable"
)

// partialSuffix names the file a restore onto a new file writes until it is
// complete: a file under the final name always holds the whole backup.
const partialSuffix = ".partial"

// restorePlan says where a restore writes. Onto an existing file or device
// it writes --to itself (its checkpoint says it is incomplete); onto a new
// file it writes PARTIAL = --to + ".partial", renamed to --to once
// complete, so that an interrupted restore never leaves under the final
// name something that looks like a disk image (file(1) calls it ext4) but
// does not mount.
type restorePlan struct {
	to    string // the final name (--to)
	write string // the file or device the engine writes: to, or the partial file
	ckpt  string // the checkpoint of write
}

// planRestore decides where a restore with flags f writes. A rerun after
// an interruption finds --to still missing and resumes onto the same
// partial file with its checkpoint (bound to the partial file's device,
// inode and birth time, and to its path).
func (a *app) planRestore(f restoreFlags) restorePlan {
	p := restorePlan{to: f.to, write: f.to}
	// Lstat: a dangling symlink is written through, as before.
	if _, err := os.Lstat(f.to); errors.Is(err, os.ErrNotExist) {
		p.write = f.to + partialSuffix
	}
	p.ckpt = f.checkpoint
	if p.ckpt == "" {
		p.ckpt = a.defaultCheckpoint(p.write)
	}
	return p
}

func (p restorePlan) partial() bool { return p.write != p.to }

// complete gives a finished partial file its final name. The engine has
// fsynced the file; durable.RenameNoReplace fsyncs the directory so that
// the name survives a crash, and leaves a file that appeared at --to
// meanwhile alone: it is not ours to overwrite.
func (p restorePlan) complete() error {
	if !p.partial() {
		return nil
	}
	if err := durable.RenameNoReplace(p.write, p.to); err != nil {
		return fmt.Errorf("restored completely into %s, but could not rename it to %s: %w; rename it yourself", p.write, p.to, err)
	}
	return nil
}

// incomplete says what a failed restore left, for its error message:
// resumable (an interruption, an unreachable target) or not, written is
// whether anything may have been written. "" when nothing was left.
func (p restorePlan) incomplete(resumable, written bool) string {
	next := "remove it (and " + p.ckpt + ") to give up"
	if resumable {
		next = "run the same command again to resume (checkpoint " + p.ckpt + ")"
	}
	if p.partial() {
		if _, err := os.Stat(p.write); err != nil {
			return ""
		}
		return fmt.Sprintf("%s was not created: the incomplete restore is in %s; %s", p.to, p.write, next)
	}
	if !resumable && !written {
		return ""
	}
	return fmt.Sprintf("%s is incomplete: do not use it; %s", p.to, next)
}
