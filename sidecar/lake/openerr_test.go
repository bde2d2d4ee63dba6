package lake

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/lib/pq"

	"github.com/siglake/siglake/test/testenv"
)

// openCatalog opens uri with a local warehouse and a deadline, as the process would.
func openCatalog(t *testing.T, uri string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := Open(ctx, Config{Catalog: uri, Warehouse: filepath.Join(t.TempDir(), "wh"), Namespace: "siglake"})
	if err == nil {
		l.Close()
	}
	return err
}

// wantBadConfig checks err is a configuration error naming the option and what it accepts.
func wantBadConfig(t *testing.T, err error, because string) {
	t.Helper()
	if !errors.Is(err, ErrBadConfig) {
		t.Fatalf("error %v: want ErrBadConfig (retrying cannot fix it)", err)
	}
	for _, s := range []string{"--catalog", "SIGLAKE_CATALOG", "accepted: sqlite:PATH", because} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
}

func TestOpenFailsFastOnASQLiteFileThatIsNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database\n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	wantBadConfig(t, openCatalog(t, "sqlite:"+path), "not a SQLite database")
}

func TestOpenFailsFastOnAMissingSQLiteDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "no", "such")
	wantBadConfig(t, openCatalog(t, "sqlite:"+filepath.Join(dir, "catalog.db")), dir+" does not exist")
	wantBadConfig(t, openCatalog(t, "sqlite:"+t.TempDir()), "is a directory")
}

func TestOpenFailsFastOnAnUnparsablePostgresURLWithoutQuotingIt(t *testing.T) {
	err := openCatalog(t, "postgres://u:p%ss@127.0.0.1:1/db")
	wantBadConfig(t, err, "not a valid postgres:// URL")
	if strings.Contains(err.Error(), "p%ss") {
		t.Errorf("error %q holds the password", err)
	}
}

func TestOpenFailsFastOnAWrongPostgresPassword(t *testing.T) {
	u, err := url.Parse(testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "not-the-password")
	err = openCatalog(t, u.String())
	wantBadConfig(t, err, "PostgreSQL refused the credentials")
	if strings.Contains(err.Error(), "not-the-password") {
		t.Errorf("error %q holds the password", err)
	}
}

// A catalog that does not answer may answer later: that is retried, not a configuration error.
func TestOpenRetriesAConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err = openCatalog(t, "postgres://u:p@"+addr+"/db?sslmode=disable")
	if err == nil || errors.Is(err, ErrBadConfig) {
		t.Fatalf("connection refused: got %v, want an error that is retried", err)
	}
	if strings.Contains(err.Error(), "u:p@") {
		t.Errorf("error %q holds the password", err)
	}
}

// A catalog behind a Unix socket (the Cloud SQL Auth Proxy's socket mode, a local server) has no
// host in the URL, only host= in the query: that is a valid URL whose failures are retried.
func TestOpenAcceptsAPostgresUnixSocketURL(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-socket-here")
	for _, uri := range []string{
		"postgres://u:pw@/db?host=" + missing + "&sslmode=disable",
		"postgres:///db?host=" + missing + "&sslmode=disable",
	} {
		err := openCatalog(t, uri)
		if err == nil || errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: got %v, want an error that is retried (no server on the socket yet)", uri, err)
		}
	}
	wantBadConfig(t, openCatalog(t, "postgres:///db?sslmode=disable"), "not a valid postgres:// URL")
}

// The test PostgreSQL listens on a Unix socket in its cluster directory too (scripts/postgres.sh):
// the catalog opens through it.
func TestOpenThroughAPostgresUnixSocket(t *testing.T) {
	u, err := url.Parse(testenv.PostgresDB(t))
	if err != nil {
		t.Fatal(err)
	}
	loc, err := os.ReadFile(filepath.Join(testenv.StateDir(), "postgres", "location"))
	if err != nil {
		t.Skipf("the test PostgreSQL's socket directory is not known: %v", err)
	}
	dir := strings.TrimSpace(string(loc))
	if _, err := os.Stat(filepath.Join(dir, ".s.PGSQL."+u.Port())); err != nil {
		t.Skipf("no socket of the test PostgreSQL in %s: %v", dir, err)
	}
	q := url.Values{"host": {dir}, "port": {u.Port()}, "sslmode": {"disable"}}
	pw, _ := u.User.Password()
	sock := &url.URL{Scheme: "postgres", User: url.UserPassword(u.User.Username(), pw), Path: u.Path, RawQuery: q.Encode()}
	if err := openCatalog(t, sock.String()); err != nil {
		t.Fatalf("open through the socket in %s: %v", dir, err)
	}
}

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
		err := openError("postgres://u:pw@h/db", &pq.Error{Code: code})
		if !errors.Is(err, ErrBadConfig) || !errors.Is(err, ErrNotProvisioned) {
			t.Errorf("%s: %v: want ErrBadConfig and ErrNotProvisioned", code, err)
		}
	}
	if err := openError("postgres://u:pw@h/db", pq.ErrSSLNotSupported); !errors.Is(err, ErrBadConfig) || errors.Is(err, ErrNotProvisioned) {
		t.Errorf("no TLS: %v: want ErrBadConfig only", err)
	}
	if err := openError("postgres://u:pw@h/db", &pq.Error{Code: "57P03"}); errors.Is(err, ErrBadConfig) {
		t.Errorf("starting up: %v: want an error that is retried", err)
	}
}
