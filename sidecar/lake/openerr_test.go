package lake

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/lake/catalogs"
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
	if !errors.Is(err, catalogs.ErrBadConfig) {
		t.Fatalf("error %v: want catalogs.ErrBadConfig (retrying cannot fix it)", err)
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
	if err == nil || errors.Is(err, catalogs.ErrBadConfig) {
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
		if err == nil || errors.Is(err, catalogs.ErrBadConfig) {
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
