package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/lib/pq" // the PostgreSQL driver siglake's SQL catalog uses
)

// PostgresDriver is the database/sql driver name for the DSNs returned here.
const PostgresDriver = "postgres"

// Postgres returns the DSN of the shared test database (SIGLAKE_TEST_POSTGRES_DSN),
// after checking that it accepts connections. Tests that create catalog tables should
// prefer PostgresDB, which isolates them from each other.
func Postgres(t testing.TB) string {
	t.Helper()
	dsn := lookup("SIGLAKE_TEST_POSTGRES_DSN")
	if dsn == "" {
		unavailable(t, "PostgreSQL: SIGLAKE_TEST_POSTGRES_DSN is not set and no postgres.env under %q (scripts/postgres.sh start)", StateDir())
		return ""
	}
	if err := pingPostgres(dsn); err != nil {
		unavailable(t, "PostgreSQL at %s: %v (scripts/postgres.sh start)", redact(dsn), err)
		return ""
	}
	return dsn
}

// PostgresDB creates an empty database for this test on the test server and returns
// its DSN; the database is dropped when the test ends.
func PostgresDB(t testing.TB) string {
	t.Helper()
	base := Postgres(t)
	db, err := sql.Open(PostgresDriver, base)
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	defer db.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database %s: %v", name, err)
	}
	t.Cleanup(func() {
		db, err := sql.Open(PostgresDriver, base)
		if err != nil {
			t.Errorf("open postgres to drop %s: %v", name, err)
			return
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// FORCE: a test that leaked a connection must not leak the database too.
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse postgres DSN: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

func pingPostgres(dsn string) error {
	db, err := sql.Open(PostgresDriver, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// redact hides the password of a URL-form DSN for messages.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	return u.Redacted()
}

// Service runs one of the repository's service scripts, e.g. Service(t, "postgres.sh",
// "stop") and later Service(t, "postgres.sh", "start") for a catalog-outage test. The
// scripts keep the port and data across stop/start, so DSNs stay valid.
func Service(t testing.TB, script, action string) {
	t.Helper()
	root := RepoRoot()
	if root == "" {
		t.Fatalf("repository root not found from the working directory")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", script), action)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/%s %s: %v\n%s", script, action, err, out)
	}
}
