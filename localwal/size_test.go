package localwal

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/siglake/siglake/localwal/internal/ipcmsg"
)

// TestDecodedSize: an uncompressed segment decodes in place (nothing beyond its file bytes); a
// zstd one allocates its uncompressed buffers, more than the compressed file holds.
func TestDecodedSize(t *testing.T) {
	for _, c := range []struct {
		comp     compression
		min, max func(file int64) int64
	}{
		{compressionNone, func(int64) int64 { return 0 }, func(int64) int64 { return 0 }},
		{compressionZstd, func(f int64) int64 { return f + 1 }, func(f int64) int64 { return 100 * f }},
	} {
		_, data := validSegment(t, c.comp, 3, 2000)
		path := filepath.Join(t.TempDir(), testName)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := DecodedSize(path)
		file := int64(len(data))
		if err != nil || n < c.min(file) || n > c.max(file) {
			t.Fatalf("%s: DecodedSize %d, %v for a %d-byte file", c.comp, n, err, file)
		}
		// A damaged file ends the estimate; it never fails or panics.
		ipcmsg.DecodedSize(bytesReaderAt(data[:len(data)/2]), int64(len(data)/2), MaxMetadataBytes)
	}
}

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, os.ErrInvalid
	}
	return copy(p, b[off:]), nil
}
