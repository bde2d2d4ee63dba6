package rewrite

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"strings"
	"syscall"

	"gocloud.dev/gcerrors"

	"github.com/siglake/siglake/merge/input"
)

// Class is what kind of failure a rewrite met, which decides what maintenance does next: a
// transient one is retried with back-off; a permanent one counts against the input it blames,
// which is set aside after SIGLAKE_COMPACTOR_SKIP_AFTER_FAILURES of them.
type Class string

const (
	// ClassTransient: the store or the network failed (5xx, 429, timeouts, connection errors),
	// or the failure is not an input's (writing outputs, the commit). Retrying can succeed.
	ClassTransient Class = "transient"
	// ClassCorrupt: an input does not parse (garbage, a truncated upload, rows out of order).
	ClassCorrupt Class = "corrupt"
	// ClassMissing: an input object is gone (404, no such file).
	ClassMissing Class = "missing"
	// ClassSchema: an input's rows do not fit the table schema.
	ClassSchema Class = "schema"
	// ClassPermission: reading an input is refused (403, EACCES).
	ClassPermission Class = "permission"
)

// Classes are every class, for metrics initialised at zero.
var Classes = []Class{ClassTransient, ClassCorrupt, ClassMissing, ClassSchema, ClassPermission}

// Permanent says whether retrying the same input cannot help.
func (c Class) Permanent() bool { return c != ClassTransient }

// Classify returns the class of a failed rewrite's error and, for a permanent one, the input file
// it blames (merge.InputError). Only what went wrong with that input counts (not an error joined
// to it while the outputs were being removed), and only bytes that do not decode are corrupt: a
// read the store or the network failed (merge.IOError) is transient unless the object is gone.
// A 403 from the object store is transient too: it is nearly always the credentials or a bucket
// policy, which fail every file alike, not this file (a local permission error is this file's).
func Classify(err error) (Class, string) {
	var ie *input.InputError
	if err == nil || !errors.As(err, &ie) {
		return ClassTransient, ""
	}
	cause := ie.Err
	var ioe *input.IOError
	switch {
	case errors.Is(cause, fs.ErrNotExist) || statusCode(cause) == 404 || gcerrors.Code(cause) == gcerrors.NotFound:
		return ClassMissing, ie.Path
	case errors.Is(cause, fs.ErrPermission):
		return ClassPermission, ie.Path
	case errors.Is(cause, syscall.EISDIR) || errors.Is(cause, syscall.EIO):
		// Something that is not a file at its path, or a disk that fails to read it: retrying
		// reads the same.
		return ClassCorrupt, ie.Path
	case errors.As(cause, &ioe) || transient(cause):
		return ClassTransient, ""
	case errors.Is(cause, input.ErrSchema):
		return ClassSchema, ie.Path
	}
	return ClassCorrupt, ie.Path
}

// transient recognises failures of the store or the network, wherever they surfaced.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE, syscall.ETIMEDOUT} {
		if errors.Is(err, e) {
			return true
		}
	}
	if c := statusCode(err); c == 429 || c >= 500 {
		return true
	}
	switch gcerrors.Code(err) {
	case gcerrors.DeadlineExceeded, gcerrors.ResourceExhausted, gcerrors.Internal:
		return true
	}
	// The SDK's retryer gives up with this after retrying 5xx answers and resets.
	msg := err.Error()
	return strings.Contains(msg, "exceeded maximum number of attempts") || strings.Contains(msg, "connection reset") ||
		strings.Contains(msg, "connection refused") || strings.Contains(msg, "StatusCode: 5")
}

// statusCode is the HTTP status of an object-store answer in err's chain (the AWS SDK's
// response errors), or 0.
func statusCode(err error) int {
	var he interface{ HTTPStatusCode() int }
	if errors.As(err, &he) {
		return he.HTTPStatusCode()
	}
	return 0
}
