package pqdecode

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// leafReader reads one leaf column chunk's values page by page, as parquet-go's row reader does
// underneath its rows: a page is decoded whole when it is opened and dropped at its end.
type leafReader struct {
	name   string
	pages  parquet.Pages
	page   parquet.Page
	vr     parquet.ValueReader // the open page's values; nil between pages
	detach bool                // byte arrays: values read keep pointing into the page's buffer
	// A leaf of a field that is not flat reads ahead to find where rows end (repetition level
	// 0): buf holds the values read, pend the part of buf not taken yet. rows and offs are the
	// scratch of a field of several leaves, interleaved row by row (Source.readField).
	buf, pend []parquet.Value
	rows      []parquet.Value
	offs      []int32
}

// nestedReadValues is how many values a leaf of a field that is not flat reads at a time.
var nestedReadValues = 1024

func newLeafReader(name string, ch parquet.ColumnChunk, nested bool) leafReader {
	l := leafReader{name: name, pages: ch.Pages()}
	switch ch.Type().Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		l.detach = true
	}
	if nested {
		l.buf = make([]parquet.Value, nestedReadValues)
	}
	return l
}

// values reads up to len(dst) > 0 values of the column chunk into dst; (0, io.EOF) at its end.
func (l *leafReader) values(dst []parquet.Value) (int, error) {
	for {
		if l.vr == nil {
			p, err := l.pages.ReadPage()
			if err != nil {
				return 0, err
			}
			l.page, l.vr = p, p.Values()
		}
		n, err := l.vr.ReadValues(dst)
		switch {
		case errors.Is(err, io.EOF):
			l.release()
		case err != nil:
			return 0, fmt.Errorf("column %s: %w", l.name, err)
		case n == 0:
			return 0, fmt.Errorf("column %s: %w", l.name, io.ErrNoProgress)
		}
		if n > 0 {
			return n, nil
		}
	}
}

// release drops the open page. Byte-array values read from it stay valid: its values buffer is
// left to the garbage collector, as parquet-go's row reader leaves it (the pages' other buffers
// go back to parquet-go's pools). Values of other kinds hold no pointer into the page.
func (l *leafReader) release() {
	if l.page == nil {
		return
	}
	if d, ok := l.page.(interface{ ReleaseAndDetachValues() }); ok && l.detach {
		d.ReleaseAndDetachValues()
	} else if !l.detach {
		parquet.Release(l.page)
	}
	l.page, l.vr = nil, nil
}

// readFlat fills dst with the next len(dst) values of a flat leaf: one per row.
func (l *leafReader) readFlat(dst []parquet.Value) error {
	for got := 0; got < len(dst); {
		n, err := l.values(dst[got:])
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("column %s ended %d rows before its row group", l.name, len(dst)-got)
		}
		if err != nil {
			return err
		}
		got += n
	}
	return nil
}

// readRows appends the values of the next n rows of a leaf that is not flat to dst, and each
// row's offset in dst to offs, then dst's length: a row starts at a value of repetition level 0
// and runs to the next one (or the column chunk's end).
func (l *leafReader) readRows(dst []parquet.Value, offs []int32, n int) ([]parquet.Value, []int32, error) {
	rows := 0
	for {
		if len(l.pend) == 0 {
			m, err := l.values(l.buf)
			if errors.Is(err, io.EOF) && rows == n {
				break
			}
			if errors.Is(err, io.EOF) {
				return nil, nil, fmt.Errorf("column %s ended %d rows before its row group", l.name, n-rows)
			}
			if err != nil {
				return nil, nil, err
			}
			l.pend = l.buf[:m]
		}
		i := 0
		for ; i < len(l.pend); i++ {
			if l.pend[i].RepetitionLevel() != 0 {
				if rows == 0 {
					return nil, nil, fmt.Errorf("column %s continues a row it did not start (repetition level %d)", l.name, l.pend[i].RepetitionLevel())
				}
				continue
			}
			if rows == n {
				break
			}
			offs = append(offs, int32(len(dst)+i))
			rows++
		}
		dst = append(dst, l.pend[:i]...)
		if l.pend = l.pend[i:]; len(l.pend) > 0 {
			break
		}
	}
	return dst, append(offs, int32(len(dst))), nil
}

// close drops the open page and closes the chunk's pages.
func (l *leafReader) close() error {
	l.release()
	l.pend = nil
	if l.pages == nil {
		return nil
	}
	err := l.pages.Close()
	l.pages = nil
	return err
}
