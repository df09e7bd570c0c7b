package lazy

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/chainvol/chainvol/internal/directio"
)

// bufSource is a faultSource that fills the buffers it is given as
// s3chain.BlockReader does: an even block as a raw object (a kind byte,
// then the block, returned from objBuf), an odd one as if decoded into
// buf. It records the buffers it saw and whether each block handed back
// was aligned for O_DIRECT.
type bufSource struct {
	*faultSource
	mu        sync.Mutex
	objs      map[uintptr]bool // first byte of each objBuf given
	unaligned int              // blocks returned at an unaligned address
	starved   int              // fetches given buffers too small to use
}

func (s *bufSource) MaxObjectBytes() int64 { return s.bs + 64 }

func (s *bufSource) ReadBlock(ctx context.Context, i int64, objBuf, buf []byte) ([]byte, int64, error) {
	n := s.BlockLen(i)
	block := s.data[i*s.bs : i*s.bs+n]
	s.mu.Lock()
	defer s.mu.Unlock()
	if int64(cap(objBuf)) < s.MaxObjectBytes() || int64(cap(buf)) < n {
		s.starved++
		return bytes.Clone(block), n, nil
	}
	s.objs[uintptr(unsafe.Pointer(&objBuf[:1][0]))] = true
	out := buf[:n]
	if i%2 == 0 {
		objBuf = objBuf[:1+n]
		objBuf[0] = 0 // the kind byte of a raw block
		out = objBuf[1:]
	}
	copy(out, block)
	if !directio.IsAligned(out) {
		s.unaligned++
	}
	return out, n, nil
}

// Hydration's fetches reuse their memory (bufs.go): every fetch gets an
// object buffer and a decode buffer big enough that the source allocates
// nothing, a raw block lands aligned for its O_DIRECT write (no copy),
// there are about as many buffers as workers however many blocks (not
// checked under -race: sync.Pool drops some on purpose there), and the
// data file ends up equal to the source.
func TestHydrateReusesBuffers(t *testing.T) {
	const bs, blocks, workers = 1 << 20, 48, 4
	s := &bufSource{faultSource: newFaultSource(t, blocks*bs, bs, 7), objs: map[uintptr]bool{}}
	s.readDelay = time.Millisecond
	im, data, _ := newWritableOf(t, s)
	if err := im.Hydrate(context.Background(), workers); err != nil {
		t.Fatal(err)
	}
	if s.starved > 0 || s.unaligned > 0 {
		t.Errorf("%d fetches without usable buffers, %d blocks unaligned", s.starved, s.unaligned)
	}
	if n := len(s.objs); n == 0 || n > 2*workers && !raceOn {
		t.Errorf("%d distinct object buffers for %d fetches by %d workers", n, blocks-1, workers)
	}
	got, err := os.ReadFile(data)
	if err != nil || !bytes.Equal(got, s.data) {
		t.Fatalf("data file differs from the source (%v)", err)
	}
}

// newWritableOf is newWritable for a Source other than a bare faultSource.
func newWritableOf(t *testing.T, s Source) (*Image, string, string) {
	t.Helper()
	dir := t.TempDir()
	data, rec := dir+"/data", dir+"/hydration/vol.bits"
	if err := os.WriteFile(data, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(data, s.SizeBytes()); err != nil {
		t.Fatal(err)
	}
	im, err := OpenWritable(s, data, rec, Options{RetryFor: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { im.Close() })
	return im, data, rec
}
