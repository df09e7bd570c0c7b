package testutil

import (
	"encoding/binary"
	"os"
	"testing"
)

// Partition is one entry of an MBR partition table, in 512-byte sectors.
type Partition struct{ Start, Sectors uint32 }

// WriteMBR writes a DOS (MBR) partition table of Linux partitions (at most
// four) at the start of the image file img, without sfdisk (not on every
// machine). It fails the test on any error.
func WriteMBR(t testing.TB, img string, parts ...Partition) {
	t.Helper()
	mbr := make([]byte, 512)
	for i, p := range parts {
		e := mbr[446+16*i : 446+16*(i+1)]
		e[4] = 0x83 // Linux
		binary.LittleEndian.PutUint32(e[8:], p.Start)
		binary.LittleEndian.PutUint32(e[12:], p.Sectors)
	}
	mbr[510], mbr[511] = 0x55, 0xaa
	f, err := os.OpenFile(img, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(mbr, 0); err != nil {
		t.Fatal(err)
	}
}
