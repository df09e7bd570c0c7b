package jobrec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chainvol/chainvol/internal/durable"
)

// maxRecordBytes bounds what List reads of one file: a record is a few
// hundred bytes; anything far larger is not one.
const maxRecordBytes = 64 << 10

// Listed is a record as List found it.
type Listed struct {
	Record
	// Stale: the process that wrote the record is gone (killed mid-job);
	// the job is not running.
	Stale bool `json:"stale"`
	// Unchecked: the record comes from another PID namespace (a reader on
	// the host, the driver in its container), where its PID cannot be
	// looked up; it is taken as running.
	Unchecked bool `json:"unchecked,omitempty"`
}

// List returns the records in dir, oldest job first. A missing dir has
// none. Files that are not records (a temporary file, a foreign or
// unreadable file) are skipped. Errors: those of reading dir.
func List(dir string) ([]Listed, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read job records in %s: %w", dir, err)
	}
	var out []Listed
	own := pidNamespace()
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") || durable.IsTemp(e.Name()) {
			continue
		}
		r, ok := readRecord(filepath.Join(dir, e.Name()))
		if !ok {
			continue
		}
		if r.PIDNamespace != "" && r.PIDNamespace != own {
			out = append(out, Listed{Record: r, Unchecked: true})
			continue
		}
		out = append(out, Listed{Record: r, Stale: !alive(r.PID, r.ProcStart)})
	}
	slices.SortFunc(out, func(a, b Listed) int { return a.StartedAt.Compare(b.StartedAt) })
	return out, nil
}

// readRecord reads one record file; false when it is gone (the job ended
// meanwhile) or is not a record.
func readRecord(path string) (Record, bool) {
	f, err := os.Open(path)
	if err != nil {
		return Record{}, false
	}
	defer f.Close()
	var r Record
	dec := json.NewDecoder(io.LimitReader(f, maxRecordBytes))
	if err := dec.Decode(&r); err != nil || r.ID == "" || r.PID <= 0 {
		return Record{}, false
	}
	return r, true
}

// Sweep removes the records in dir that no job will end: stale ones, and
// those of an earlier instance of this program (the same process name, not
// this process: a driver container restarted gets a new PID namespace, so
// its predecessor's records cannot be told stale by PID), and temporary
// files older than a minute (a writer killed between create and rename).
// It is for a program of which one instance works on dir at a time, the
// driver, at its start; chainvolctl's records of another namespace stay. It
// returns how many files it removed. Errors: those of List.
func Sweep(dir string) (int, error) {
	recs, err := List(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	self := filepath.Base(os.Args[0])
	for _, r := range recs {
		earlier := r.Process == self && (r.Unchecked || r.PID != os.Getpid())
		if (r.Stale || earlier) && os.Remove(filepath.Join(dir, r.ID+".json")) == nil {
			n++
		}
	}
	entries, _ := os.ReadDir(dir) // List read it; a vanished dir has no temporaries
	for _, e := range entries {
		if !durable.IsTemp(e.Name()) {
			continue
		}
		t := filepath.Join(dir, e.Name())
		if fi, err := os.Stat(t); err == nil && time.Since(fi.ModTime()) > time.Minute && os.Remove(t) == nil {
			n++
		}
	}
	return n, nil
}

// pidNamespace names this process's PID namespace, "" when it cannot be
// read (then PIDs are compared as they are).
func pidNamespace() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns
}

// alive reports whether process pid runs and started at start (clock
// ticks after boot): a PID reused by another process, as after a
// container's restart, does not count. A start of 0 (unknown) checks the
// PID alone.
func alive(pid int, start uint64) bool {
	got, err := procStart(pid)
	if err != nil {
		return false
	}
	return start == 0 || got == start
}

// procStart reads field 22 (starttime) of /proc/PID/stat (proc(5)). The
// second field, the command name in parentheses, may hold spaces and
// parentheses, so the fields are counted after its last ')'.
func procStart(pid int) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	const startField = 22 - 3 // fields[0] is field 3, the state
	if len(fields) <= startField {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	return strconv.ParseUint(fields[startField], 10, 64)
}
