package rewrite

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"strings"
	"syscall"

	"gocloud.dev/gcerrors"

	"github.com/siglake/siglake/merge"
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
// it blames (merge.InputError).
func Classify(err error) (Class, string) {
	if err == nil || transient(err) {
		return ClassTransient, ""
	}
	var ie *merge.InputError
	if !errors.As(err, &ie) {
		return ClassTransient, ""
	}
	code := statusCode(err)
	switch {
	case errors.Is(err, fs.ErrNotExist) || code == 404 || gcerrors.Code(err) == gcerrors.NotFound:
		return ClassMissing, ie.Path
	case errors.Is(err, fs.ErrPermission) || code == 403 || gcerrors.Code(err) == gcerrors.PermissionDenied:
		return ClassPermission, ie.Path
	case errors.Is(err, merge.ErrSchema):
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
