package catalogs

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/lib/pq"
)

// permanentOpenError decides between exiting and waiting: an outage in any of its forms is waited
// out (""), only what the catalog says is wrong with the configuration is permanent.
func TestPermanentOpenErrorRetriesTransientCatalogErrors(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("create namespace: %w", err) }
	for _, c := range []struct {
		name      string
		err       error
		permanent string // "" retried
	}{
		{"postgres starting up", &pq.Error{Code: "57P03", Message: "the database system is starting up"}, ""},
		{"postgres too many connections", wrap(&pq.Error{Code: "53300", Message: "sorry, too many clients already"}), ""},
		{"postgres shutting down", &pq.Error{Code: "57P01"}, ""},
		{"postgres serialization failure", &pq.Error{Code: "40001"}, ""},
		// A Service's DNS record may appear after the pod that uses it starts: not found is retried.
		{"dns not found", wrap(&net.DNSError{Err: "no such host", Name: "pg.ns.svc", IsNotFound: true}), ""},
		{"dns temporary", &net.DNSError{Err: "server misbehaving", Name: "pg.ns.svc", IsTemporary: true}, ""},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}, ""},
		{"unknown", errors.New("something else"), ""},

		{"postgres wrong password", &pq.Error{Code: "28P01"}, "refused the credentials"},
		{"postgres no such role", wrap(&pq.Error{Code: "28000", Message: `role "x" does not exist`}), "refused the credentials"},
		{"postgres no such database", &pq.Error{Code: "3D000"}, "database does not exist"},
		{"postgres no privilege", &pq.Error{Code: "42501"}, "may not create or use"},
		{"postgres without TLS", wrap(pq.ErrSSLNotSupported), "does not accept TLS"},
		{"rest unauthorized", wrap(rest.ErrUnauthorized), "refused the credentials"},
	} {
		if got := permanentOpenError(c.err); (c.permanent == "") != (got == "") || !strings.Contains(got, c.permanent) {
			t.Errorf("%s: permanentOpenError(%v) = %q, want %q", c.name, c.err, got, c.permanent)
		}
	}
}

// SQLite's extended result codes tell a file that is read-only from one that another process is
// recovering or holds the lock of; only the first is permanent.
func TestSQLiteOpenErrorClassesExtendedCodes(t *testing.T) {
	for _, c := range []struct {
		name      string
		code      int
		permanent bool
	}{
		{"SQLITE_BUSY", 5, false},
		{"SQLITE_BUSY_RECOVERY", 261, false},
		{"SQLITE_LOCKED", 6, false},
		{"SQLITE_LOCKED_SHAREDCACHE", 262, false},
		{"SQLITE_READONLY_RECOVERY", 264, false},
		{"SQLITE_READONLY_CANTLOCK", 520, false},
		{"SQLITE_READONLY_ROLLBACK", 776, false},
		{"SQLITE_READONLY_CANTINIT", 1288, false},
		{"SQLITE_IOERR_SHORT_READ", 522, false},
		{"SQLITE_READONLY", 8, true},
		{"SQLITE_READONLY_DIRECTORY", 1544, true},
		{"SQLITE_NOTADB", 26, true},
		{"SQLITE_CORRUPT", 11, true},
		{"SQLITE_CANTOPEN_ISDIR", 526, true},
		{"SQLITE_PERM", 3, true},
		{"SQLITE_AUTH", 23, true},
	} {
		if got := sqliteOpenError(c.code); (got != "") != c.permanent {
			t.Errorf("%s (%d): sqliteOpenError = %q, want permanent %v", c.name, c.code, got, c.permanent)
		}
	}
}

// The refusals a catalog being provisioned also gives are marked, so the long-running process
// can wait them out; a file that is not a database is not.
func TestOpenErrorMarksWhatProvisioningExplains(t *testing.T) {
	for _, code := range []pq.ErrorCode{"28000", "28P01", "3D000", "42501"} {
		err := OpenError("postgres://u:pw@h/db", &pq.Error{Code: code})
		if !errors.Is(err, ErrBadConfig) || !errors.Is(err, ErrNotProvisioned) {
			t.Errorf("%s: %v: want ErrBadConfig and ErrNotProvisioned", code, err)
		}
	}
	if err := OpenError("postgres://u:pw@h/db", pq.ErrSSLNotSupported); !errors.Is(err, ErrBadConfig) || errors.Is(err, ErrNotProvisioned) {
		t.Errorf("no TLS: %v: want ErrBadConfig only", err)
	}
	if err := OpenError("postgres://u:pw@h/db", &pq.Error{Code: "57P03"}); errors.Is(err, ErrBadConfig) {
		t.Errorf("starting up: %v: want an error that is retried", err)
	}
}
