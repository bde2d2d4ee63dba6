package input

import (
	"io"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	icebergio "github.com/apache/iceberg-go/io"
)

// ReadBufferBytes is the read-ahead per column stream: column chunks are read
// in ranged pieces of this size, never as whole objects.
const ReadBufferBytes = 1 << 20

// File is one Parquet input opened for ranged reads through FileIO.
type File struct {
	Path    string
	read    *int64 // bytes read so far, shared by all inputs of one rewrite
	f       icebergio.File
	Props   *parquet.ReaderProperties // BufferSize may be lowered before readers are made
	Parquet *file.Reader
	Arrow   *pqarrow.FileReader
}

// Open opens path and parses its footer. batchRows is the record-reader
// batch length; it bounds the decoded rows one reader holds.
func Open(fs icebergio.IO, path string, mem memory.Allocator, batchRows int64) (*File, error) {
	return OpenCounted(fs, path, mem, batchRows, ReadBufferBytes, new(int64))
}

// OpenCounted is Open with a per-column read-ahead of bufBytes and
// a byte counter.
func OpenCounted(fs icebergio.IO, path string, mem memory.Allocator, batchRows, bufBytes int64, read *int64) (*File, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, NewError("opening input", path, &IOError{Err: err})
	}
	props := parquet.NewReaderProperties(mem)
	props.BufferedStreamEnabled = true
	props.BufferSize = bufBytes
	// Other writers (DuckDB: 122,880-row row groups) write data pages of
	// many MiB; decoded whole, fan-in x columns of them dominated a k-way
	// merge's peak. Streamed, a plain page costs about a 1 MiB buffer.
	props.PageStreamingEnabled = true
	pf, err := file.NewParquetReader(readerAtSeeker{f, read}, file.WithReadProps(props))
	if err != nil {
		_ = f.Close()
		return nil, NewError("reading Parquet footer of input", path, err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: batchRows}, mem)
	if err != nil {
		_ = pf.Close()
		_ = f.Close()
		return nil, NewError("reading Arrow schema of input", path, err)
	}
	return &File{Path: path, read: read, f: f, Props: props, Parquet: pf, Arrow: fr}, nil
}

// Size is the file's size in bytes, from the store.
func (in *File) Size() (int64, error) {
	st, err := in.f.Stat()
	if err != nil {
		return 0, NewError("reading input", in.Path, &IOError{Err: err})
	}
	return st.Size(), nil
}

// ReaderAt reads the file's bytes, counting them with the other reads of the file.
func (in *File) ReaderAt() io.ReaderAt { return readerAtSeeker{in.f, in.read} }

func (in *File) Close() error {
	err := in.Parquet.Close()
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
