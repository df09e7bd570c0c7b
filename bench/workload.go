package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// gen makes the files of the workload from one seeded generator, so two
// runs with the same seed and sizes write the same bytes.
type gen struct {
	rng   *rand.Rand
	cc    *rand.ChaCha8 // fast incompressible bytes
	words []string
	zipf  *rand.Zipf
	root  string
	// files written so far and their sizes, for the change rounds.
	small, medium, large []string
}

func newGen(seed uint64, root string) *gen {
	var s [32]byte
	for i := range 4 {
		s[i*8] = byte(seed >> (8 * i))
	}
	s[31] = byte(seed)
	cc := rand.NewChaCha8(s)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := &gen{rng: rng, cc: cc, root: root}
	g.words = vocabulary(rng, 20000)
	// Zipf-distributed words make text that compresses like prose (about
	// 3:1 with zstd), not like random letters or one repeated line.
	g.zipf = rand.NewZipf(rng, 1.1, 2, uint64(len(g.words)-1))
	return g
}

// vocabulary makes n distinct pseudo-words of 2-12 letters.
func vocabulary(rng *rand.Rand, n int) []string {
	const letters = "etaoinshrdlcumwfgypbvkjxqz"
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		l := 2 + rng.IntN(11)
		b := make([]byte, l)
		for i := range b {
			// Squaring skews toward common letters.
			f := rng.Float64()
			b[i] = letters[int(f*f*float64(len(letters)))]
		}
		if w := string(b); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// text returns n bytes of word-salad prose with punctuation and newlines.
func (g *gen) text(n int) []byte {
	b := make([]byte, 0, n+16)
	col := 0
	for len(b) < n {
		w := g.words[g.zipf.Uint64()]
		b = append(b, w...)
		col += len(w) + 1
		switch r := g.rng.IntN(20); {
		case col > 72:
			b = append(b, '.', '\n')
			col = 0
		case r == 0:
			b = append(b, ", "...)
		default:
			b = append(b, ' ')
		}
	}
	return b[:n]
}

// random returns n incompressible bytes: stands for already compressed data
// (media, archives, gzip output), which no tool can shrink.
func (g *gen) random(n int) []byte {
	b := make([]byte, n)
	_, _ = g.cc.Read(b)
	return b
}

// writeFile writes data to rel under the root, creating its directory.
func (g *gen) writeFile(rel string, data []byte) error {
	p := filepath.Join(g.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

// writeLarge streams a large file in 4 MiB pieces, alternating text and
// incompressible runs like a database or VM image would hold.
func (g *gen) writeLarge(rel string, size int64, textShare float64) error {
	p := filepath.Join(g.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for left := size; left > 0; {
		n := min(left, 4<<20)
		var chunk []byte
		if g.rng.Float64() < textShare {
			chunk = g.text(int(n))
		} else {
			chunk = g.random(int(n))
		}
		if _, err := w.Write(chunk); err != nil {
			f.Close()
			return err
		}
		left -= n
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	g.large = append(g.large, rel)
	return f.Close()
}

// fillStats describes what fill wrote.
type fillStats struct {
	Bytes                                         int64
	Files, SmallFiles, MediumFiles, LargeFiles    int
	TextBytes, CompressedBytes, LargeBytes, Small int64
}

// fill writes about total bytes of files: 40% in three large files (two
// mixed "database" files and one text log), 25% already compressed files of
// 1-32 MiB, 20% text documents of 64 KiB-4 MiB, 15% small files of 1-32 KiB
// (thousands of them, in 100 directories).
func (g *gen) fill(total int64) (fillStats, error) {
	var st fillStats
	large := []struct {
		rel   string
		share float64
		text  float64
	}{{"db/tables.dat", 0.15, 0.5}, {"db/index.dat", 0.15, 0.3}, {"log/app.log", 0.10, 1}}
	for _, l := range large {
		n := int64(float64(total) * l.share)
		if err := g.writeLarge(l.rel, n, l.text); err != nil {
			return st, err
		}
		st.LargeBytes += n
		st.LargeFiles++
	}
	var media, docs int
	var err error
	st.CompressedBytes, media, err = g.mediumFiles(int64(float64(total)*0.25), "media/m%05d.bin",
		func() int { return 1<<20 + g.rng.IntN(31<<20) }, g.random)
	st.MediumFiles += media
	if err != nil {
		return st, err
	}
	st.TextBytes, docs, err = g.mediumFiles(int64(float64(total)*0.20), "docs/d%05d.txt",
		func() int { return 64<<10 + g.rng.IntN(4<<20-64<<10) }, g.text)
	st.MediumFiles += docs
	if err != nil {
		return st, err
	}
	for left := int64(float64(total) * 0.15); left > 0; {
		n, err := g.smallFile(&st)
		if err != nil {
			return st, err
		}
		left -= n
	}
	st.Bytes = st.LargeBytes + st.CompressedBytes + st.TextBytes + st.Small
	st.Files = st.LargeFiles + st.MediumFiles + st.SmallFiles
	return st, nil
}

// mediumFiles writes files until budget bytes are written, each of size()
// bytes (the last cut to fit) filled by content and named by the format
// name with its number from 0; they join g.medium. It returns the bytes
// and files written.
func (g *gen) mediumFiles(budget int64, name string, size func() int, content func(int) []byte) (written int64, files int, err error) {
	for ; written < budget; files++ {
		n := min(budget-written, int64(size()))
		rel := fmt.Sprintf(name, files)
		if err := g.writeFile(rel, content(int(n))); err != nil {
			return written, files, err
		}
		g.medium = append(g.medium, rel)
		written += n
	}
	return written, files, nil
}

// smallFile writes one 1-32 KiB file, text four times out of five.
func (g *gen) smallFile(st *fillStats) (int64, error) {
	n := 1<<10 + g.rng.IntN(31<<10)
	rel := fmt.Sprintf("small/s%03d/f%06d", g.rng.IntN(100), len(g.small)+st.SmallFiles)
	data := g.text(n)
	if g.rng.IntN(5) == 0 {
		data = g.random(n)
	}
	if err := g.writeFile(rel, data); err != nil {
		return 0, err
	}
	g.small = append(g.small, rel)
	st.Small += int64(n)
	st.SmallFiles++
	return int64(n), nil
}

// changeStats describes one round of changes.
type changeStats struct {
	NewBytes, OverwrittenBytes, DeletedBytes int64
	NewFiles, Overwrites, DeletedFiles       int
}

// change touches about bytes of data: 40% new files (small ones and one
// compressed file), 40% overwrites of 64 KiB-1 MiB in the middle of the
// large files, 20% deletions of existing small and medium files.
func (g *gen) change(round int, bytes int64) (changeStats, error) {
	var st changeStats
	newBudget := int64(float64(bytes) * 0.4)
	blob := newBudget / 2
	rel := fmt.Sprintf("new/r%02d/blob.bin", round)
	if err := g.writeFile(rel, g.random(int(blob))); err != nil {
		return st, err
	}
	g.medium = append(g.medium, rel)
	st.NewBytes, st.NewFiles = blob, 1
	var fs fillStats
	for st.NewBytes < newBudget {
		n, err := g.smallFile(&fs)
		if err != nil {
			return st, err
		}
		st.NewBytes += n
		st.NewFiles++
	}
	if err := g.overwrite(int64(float64(bytes)*0.4), &st); err != nil {
		return st, err
	}
	return st, g.delete(int64(float64(bytes)*0.2), &st)
}

// overwrite rewrites runs in the middle of the large files in place.
func (g *gen) overwrite(budget int64, st *changeStats) error {
	for st.OverwrittenBytes < budget {
		p := filepath.Join(g.root, g.large[g.rng.IntN(len(g.large))])
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		n := int64(64<<10 + g.rng.IntN(1<<20-64<<10))
		n = min(n, budget-st.OverwrittenBytes+4096, fi.Size()/4)
		off := fi.Size()/8 + g.rng.Int64N(fi.Size()*3/4-n)
		data := g.random(int(n))
		if strings.HasSuffix(p, ".log") {
			data = g.text(int(n))
		}
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteAt(data, off)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		st.OverwrittenBytes += n
		st.Overwrites++
	}
	return nil
}

// delete removes random small and medium files until budget bytes are gone.
func (g *gen) delete(budget int64, st *changeStats) error {
	for st.DeletedBytes < budget && len(g.small)+len(g.medium) > 0 {
		list := &g.small
		if g.rng.IntN(4) == 0 && len(g.medium) > 0 || len(g.small) == 0 {
			list = &g.medium
		}
		i := g.rng.IntN(len(*list))
		rel := (*list)[i]
		p := filepath.Join(g.root, rel)
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		// A 30 MiB file would overshoot a round's budget on its own.
		if list == &g.medium && fi.Size() > budget-st.DeletedBytes+64<<10 && len(g.small) > 0 {
			continue
		}
		(*list)[i] = (*list)[len(*list)-1]
		*list = (*list)[:len(*list)-1]
		if err := os.Remove(p); err != nil {
			return err
		}
		st.DeletedBytes += fi.Size()
		st.DeletedFiles++
	}
	return nil
}
