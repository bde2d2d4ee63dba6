package merge

import (
	"io"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	icebergio "github.com/apache/iceberg-go/io"
)

// readBufferBytes is the read-ahead per column stream: column chunks are read
// in ranged pieces of this size, never as whole objects.
const readBufferBytes = 1 << 20

// openedInput is one Parquet input opened for ranged reads through FileIO.
type openedInput struct {
	path  string
	read  *int64 // bytes read so far, shared by all inputs of one rewrite
	f     icebergio.File
	props *parquet.ReaderProperties // BufferSize may be lowered before readers are made
	pf    *file.Reader
	fr    *pqarrow.FileReader
}

// openInput opens path and parses its footer. batchRows is the record-reader
// batch length; it bounds the decoded rows one reader holds.
// pageStreaming is on outside tests; TestKWayMemoryIndependentOfRowGroupSize
// turns it off to show the test can tell.
var pageStreaming = true

func openInput(fs icebergio.IO, path string, mem memory.Allocator, batchRows int64) (*openedInput, error) {
	return openInputCounted(fs, path, mem, batchRows, readBufferBytes, new(int64))
}

// openInputCounted is openInput with a per-column read-ahead of bufBytes and
// a byte counter.
func openInputCounted(fs icebergio.IO, path string, mem memory.Allocator, batchRows, bufBytes int64, read *int64) (*openedInput, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, inputErr("opening input", path, &IOError{Err: err})
	}
	props := parquet.NewReaderProperties(mem)
	props.BufferedStreamEnabled = true
	props.BufferSize = bufBytes
	// Other writers (DuckDB: 122,880-row row groups) write data pages of
	// many MiB; decoded whole, fan-in x columns of them dominated a k-way
	// merge's peak. Streamed, a plain page costs about a 1 MiB buffer.
	props.PageStreamingEnabled = pageStreaming
	pf, err := file.NewParquetReader(readerAtSeeker{f, read}, file.WithReadProps(props))
	if err != nil {
		_ = f.Close()
		return nil, inputErr("reading Parquet footer of input", path, err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: batchRows}, mem)
	if err != nil {
		_ = pf.Close()
		_ = f.Close()
		return nil, inputErr("reading Arrow schema of input", path, err)
	}
	return &openedInput{path: path, read: read, f: f, props: props, pf: pf, fr: fr}, nil
}

func (in *openedInput) Close() error {
	err := in.pf.Close()
	if cerr := in.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readerAtSeeker adapts an iceberg-go File (already an io.ReaderAt and
// io.Seeker) to parquet.ReaderAtSeeker, counting the bytes read.
type readerAtSeeker struct {
	f    icebergio.File
	read *int64
}

func (r readerAtSeeker) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.f.ReadAt(p, off)
	atomic.AddInt64(r.read, int64(n))
	return n, ioErr(err)
}
func (r readerAtSeeker) Seek(off int64, whence int) (int64, error) {
	n, err := r.f.Seek(off, whence)
	return n, ioErr(err)
}

var _ io.ReaderAt = readerAtSeeker{}
