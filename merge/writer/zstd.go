package writer

import (
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
	pqzstd "github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/parquet-go/parquet-go/format"
)

// zstdWindow is the match window of the zstd encoders Parquet pages are
// compressed with. arrow-go's encoders use zstd's default 8 MiB window and
// keep a 16 MiB history buffer each, although a page is compressed on its own
// as one frame and siglake's pages are at most a few hundred KiB (dictionary
// pages at most 1 MiB): a window past the page size finds nothing more and
// only costs memory (about a tenth of a k-way merge's live heap). 1 MiB
// keeps the history at 2 MiB. The frames are ordinary zstd; any reader
// decodes them.
const zstdWindow = 1 << 20

// smallWindowZstd is arrow-go's zstd codec with encoders of zstdWindow;
// decoding and streaming go to arrow-go's codec unchanged.
type smallWindowZstd struct {
	compress.Codec
	mu    sync.Mutex
	pools map[zstd.EncoderLevel]*sync.Pool
}

func (z *smallWindowZstd) pool(level zstd.EncoderLevel) *sync.Pool {
	z.mu.Lock()
	defer z.mu.Unlock()
	p := z.pools[level]
	if p == nil {
		p = &sync.Pool{New: func() any {
			enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(level),
				zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true), zstd.WithWindowSize(zstdWindow))
			if err != nil {
				panic(err) // constant, valid options
			}
			return enc
		}}
		z.pools[level] = p
	}
	return p
}

func (z *smallWindowZstd) EncodeLevel(dst, src []byte, level int) []byte {
	l := zstd.SpeedDefault
	if level != compress.DefaultCompressionLevel {
		l = zstd.EncoderLevelFromZstd(level)
	}
	p := z.pool(l)
	enc := p.Get().(*zstd.Encoder)
	defer p.Put(enc)
	return enc.EncodeAll(src, dst[:0])
}

func (z *smallWindowZstd) Encode(dst, src []byte) []byte {
	return z.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

func (z *smallWindowZstd) DecodeWithError(dst, src []byte) ([]byte, error) {
	return compress.Decode(z.Codec, dst, src)
}

func (z *smallWindowZstd) NewReader(r io.Reader) io.ReadCloser {
	return z.Codec.(compress.StreamingCodec).NewReader(r)
}

func (z *smallWindowZstd) NewWriter(w io.Writer) io.WriteCloser {
	return z.Codec.(compress.StreamingCodec).NewWriter(w)
}

func (z *smallWindowZstd) NewWriterLevel(w io.Writer, level int) (io.WriteCloser, error) {
	return z.Codec.(compress.StreamingCodec).NewWriterLevel(w, level)
}

// pagesZstd holds the small-window encoders of both Parquet encoders (arrow-go's through the
// codec registry, parquet-go's through pqgoZstd).
var pagesZstd = &smallWindowZstd{pools: map[zstd.EncoderLevel]*sync.Pool{}}

// pqgoZstd is parquet-go's zstd codec with the encoders arrow-go's pages get: the small window,
// level 1 (writerProperties), entropy-coded literals; decoding is parquet-go's own.
type pqgoZstd struct{}

func (pqgoZstd) String() string { return "ZSTD" }

func (pqgoZstd) CompressionCodec() format.CompressionCodec { return format.Zstd }

func (pqgoZstd) Encode(dst, src []byte) ([]byte, error) {
	p := pagesZstd.pool(zstd.EncoderLevelFromZstd(zstdLevel))
	enc := p.Get().(*zstd.Encoder)
	defer p.Put(enc)
	return enc.EncodeAll(src, dst[:0]), nil
}

func (pqgoZstd) Decode(dst, src []byte) ([]byte, error) { return pqgoZstdDecoder.Decode(dst, src) }

var pqgoZstdDecoder = &pqzstd.Codec{}

// The codec registry is process-wide: every Parquet writer of the process
// (siglake's and iceberg-go's) gets the smaller window.
func init() {
	base, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		return // arrow-go without zstd: nothing to wrap
	}
	if _, ok := base.(compress.StreamingCodec); !ok {
		return
	}
	pagesZstd.Codec = base
	compress.RegisterCodec(compress.Codecs.Zstd, pagesZstd)
}
