package rewrite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"syscall"
	"testing"

	"github.com/siglake/siglake/merge/input"
)

// statusErr is an object-store answer as the AWS SDK reports it (HTTPStatusCode).
type statusErr int

func (e statusErr) Error() string       { return fmt.Sprintf("https response error StatusCode: %d", int(e)) }
func (e statusErr) HTTPStatusCode() int { return int(e) }

// TestClassify: only bytes that do not decode are corrupt; store and network failures under an
// input are transient unless the object is gone; failures not of an input are transient; an error
// joined while removing outputs does not change the input's class.
func TestClassify(t *testing.T) {
	in := func(err error) error { return &input.InputError{Path: "f.parquet", Op: "reading input", Err: err} }
	io_ := func(err error) error { return in(&input.IOError{Err: err}) }
	for _, c := range []struct {
		name string
		err  error
		want Class
	}{
		{"garbage footer", in(errors.New("parquet: could not read footer: invalid magic")), ClassCorrupt},
		{"out of order", in(errors.New("not sorted by timestamp at row 3")), ClassCorrupt},
		{"schema", in(fmt.Errorf("%w: column %q has type int64", input.ErrSchema, "service")), ClassSchema},
		{"local file gone", io_(fs.ErrNotExist), ClassMissing},
		{"S3 404", io_(statusErr(404)), ClassMissing},
		{"local permission", io_(fs.ErrPermission), ClassPermission},
		{"S3 403: credentials, not the file", io_(statusErr(403)), ClassTransient},
		{"S3 503", io_(statusErr(503)), ClassTransient},
		{"S3 429", in(statusErr(429)), ClassTransient},
		{"short read through the network", io_(io.ErrUnexpectedEOF), ClassTransient},
		{"DNS", io_(&net.DNSError{Err: "no such host", Name: "s3"}), ClassTransient},
		{"reset", io_(syscall.ECONNRESET), ClassTransient},
		{"a directory at the path", io_(&fs.PathError{Op: "read", Path: "f.parquet", Err: syscall.EISDIR}), ClassCorrupt},
		{"retries exhausted, seen by the decoder", in(errors.New("operation error S3: GetObject, exceeded maximum number of attempts, 3")), ClassTransient},
		{"shutdown", in(context.Canceled), ClassTransient},
		{"not an input's: writing outputs", errors.New("write output: 503"), ClassTransient},
		{"corrupt input, removing outputs got 403", errors.Join(in(errors.New("invalid magic")), statusErr(403)), ClassCorrupt},
		{"corrupt input, removing outputs got 503", errors.Join(in(errors.New("invalid magic")), statusErr(503)), ClassCorrupt},
	} {
		got, file := Classify(fmt.Errorf("merge 9 files of partition p: %w", c.err))
		if got != c.want {
			t.Errorf("%s: class %s, want %s", c.name, got, c.want)
		}
		if (file != "") != c.want.Permanent() {
			t.Errorf("%s: blames %q; a permanent class blames the input, a transient one nothing", c.name, file)
		}
	}
}
