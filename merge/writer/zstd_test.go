package writer

import (
	"bytes"
	"runtime"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// TestZstdCodecSmallWindow: Parquet pages go through the small-window
// encoder, which round-trips through the decoder and allocates a fraction of
// the 16 MiB history an 8 MiB-window encoder keeps.
func TestZstdCodecSmallWindow(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	z, ok := c.(*smallWindowZstd)
	if !ok {
		t.Fatalf("zstd codec is %T, want the small-window one", c)
	}
	page := bytes.Repeat([]byte("GET /api/v1/users/42 status=200 latency_ms=12 msg=ok "), 5000) // ~270 KB
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fresh := &smallWindowZstd{Codec: z.Codec, pools: map[zstd.EncoderLevel]*sync.Pool{}} // no pooled encoder yet
	enc := fresh.EncodeLevel(nil, page, 1)                                               // siglake's level
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 6<<20 {
		t.Errorf("encoding one page with a fresh encoder allocated %d bytes, want < 6 MiB", got)
	}
	dec, err := compress.Decode(c, nil, enc)
	if err != nil || !bytes.Equal(dec, page) {
		t.Fatalf("round trip: %v, equal %v", err, bytes.Equal(dec, page))
	}
	if _, ok := c.(compress.StreamingCodec); !ok {
		t.Fatal("the codec lost the streaming interface")
	}
}
