package catalogs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/lib/pq"
	"modernc.org/sqlite"

	"github.com/siglake/siglake/sidecar/lake/redact"
)

// acceptedCatalogs is what --catalog accepts, for the errors that reject it.
const acceptedCatalogs = "accepted: sqlite:PATH (a SQLite catalog file, created if missing, in an existing directory), " +
	"postgres://USER:PASSWORD@HOST:PORT/DB (reserved characters in the password percent-encoded, % as %25), " +
	"postgres://USER@/DB?host=/SOCKET/DIR (a Unix socket), " +
	"rest+http(s)://HOST/PATH"

// ErrBadConfig marks errors in the catalog or warehouse options themselves (retrying cannot help).
var ErrBadConfig = errors.New("bad configuration")

// badCatalog is the error for a --catalog that retrying cannot make work.
func badCatalog(uri, what string, cause error) error {
	if cause != nil {
		return fmt.Errorf("%w: --catalog / SIGLAKE_CATALOG %s: %s (%w); %s", ErrBadConfig, redact.URI(uri), what, cause, acceptedCatalogs)
	}
	return fmt.Errorf("%w: --catalog / SIGLAKE_CATALOG %s: %s; %s", ErrBadConfig, redact.URI(uri), what, acceptedCatalogs)
}

// ErrNotProvisioned marks the configuration errors that a catalog being set up also gives: a role
// or database that does not exist yet, a password or grant not applied yet. On Kubernetes an
// operator (CloudNativePG, Zalando, Crunchy) starts PostgreSQL before it creates them, so a
// long-running process waits these out for a while instead of crash-looping; they also wrap
// ErrBadConfig, and one-shot commands fail on them at once.
var ErrNotProvisioned = errors.New("the catalog may not be provisioned yet")

// notProvisioned wraps a bad-configuration error so that it also matches ErrNotProvisioned.
type notProvisioned struct{ error }

func (e notProvisioned) Unwrap() error        { return e.error }
func (e notProvisioned) Is(target error) bool { return target == ErrNotProvisioned }

// OpenError turns a failure to open the catalog, or of its first query, into what Open returns: a bad-configuration error
// naming the option when retrying cannot fix it (marked ErrNotProvisioned when set-up order may
// explain it), else the error to retry.
func OpenError(uri string, err error) error {
	why := permanentOpenError(err)
	if why == "" {
		return err
	}
	bad := badCatalog(uri, why, err)
	var pe *pq.Error
	if errors.As(err, &pe) && (pe.Code.Class() == "28" || pe.Code == "3D000" || pe.Code == "42501") {
		return notProvisioned{bad}
	}
	return bad
}

// permanentOpenError is the one place that decides whether opening the catalog failed for a
// reason retrying cannot fix, and names that reason; "" means retry. Only what the catalog itself
// says is wrong with the configuration counts as permanent: a file that is not a database, a
// refused login, a database that does not exist. Everything else (connection refused, timeouts,
// DNS, a busy or locked file, 5xx answers, and errors not known here) is retried, because an
// outage takes more forms than can be listed and a process that exits on one restarts into the
// same wait. A name that does not resolve is retried too: in Kubernetes a Service's DNS record
// may appear after the pods that use it start, and a PostgreSQL that is starting up (57P03) or
// full (53300) will take connections again.
func permanentOpenError(err error) string {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return sqliteOpenError(se.Code())
	}
	var pe *pq.Error
	if errors.As(err, &pe) {
		switch {
		case pe.Code.Class() == "28": // invalid_authorization_specification, invalid_password
			return "PostgreSQL refused the credentials"
		case pe.Code == "3D000": // invalid_catalog_name
			return "the PostgreSQL database does not exist"
		case pe.Code == "42501": // insufficient_privilege
			return "the PostgreSQL user may not create or use the catalog tables"
		}
		return ""
	}
	switch {
	case errors.Is(err, pq.ErrSSLNotSupported):
		return "the PostgreSQL server does not accept TLS (add sslmode=disable to use a plain connection)"
	case errors.Is(err, rest.ErrUnauthorized), errors.Is(err, rest.ErrForbidden):
		return "the REST catalog refused the credentials"
	}
	return ""
}

// checkSQLitePath rejects a sqlite:PATH whose directory does not exist or that names a directory,
// before SQLite turns either into a generic "unable to open database file".
func checkSQLitePath(uri, abs string) error {
	dir := filepath.Dir(abs)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return badCatalog(uri, fmt.Sprintf("directory %s does not exist", dir), nil)
	case err != nil:
		return badCatalog(uri, fmt.Sprintf("directory %s cannot be read", dir), err)
	case !st.IsDir():
		return badCatalog(uri, fmt.Sprintf("%s is not a directory", dir), nil)
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return badCatalog(uri, abs+" is a directory, not a SQLite file", nil)
	}
	return nil
}

// sqliteOpenError classes a SQLite result code the way permanentOpenError does. It looks at the
// extended code where one names a passing state: SQLITE_READONLY_RECOVERY (264) and
// SQLITE_READONLY_CANTLOCK (520) share the primary code of a read-only file (8), yet last only
// while another process recovers the WAL or holds its shared-memory lock.
func sqliteOpenError(code int) string {
	switch code {
	case 8, 1544: // SQLITE_READONLY, SQLITE_READONLY_DIRECTORY
		return "the SQLite file or its directory is read-only"
	}
	switch code & 0xff { // the primary result code; extended codes add detail above it
	case 26: // SQLITE_NOTADB
		return "the file is not a SQLite database"
	case 11: // SQLITE_CORRUPT
		return "the SQLite file is corrupt"
	case 14: // SQLITE_CANTOPEN: not the missing directory (checked before opening): permissions
		return "the SQLite file cannot be opened (permissions, or not a regular file)"
	case 3, 23: // SQLITE_PERM, SQLITE_AUTH
		return "access to the SQLite file is denied"
	}
	return "" // BUSY, LOCKED, the other READONLY_* and the rest: retried
}
