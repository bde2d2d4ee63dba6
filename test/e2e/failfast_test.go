package e2e

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/test/testenv"
)

// TestCatalogRetryingCannotFixFailsFast: a catalog that no retry can make work (a file that is
// not a database, a directory that does not exist, a password PostgreSQL refuses) stops the
// process at once, in --once and not, with an error naming --catalog / SIGLAKE_CATALOG and what
// is accepted, and without the password; before, each was retried for ever as "catalog
// unreachable".
func TestCatalogRetryingCannotFixFailsFast(t *testing.T) {
	dir := t.TempDir()
	wal := filepath.Join(dir, "wal")
	if err := os.MkdirAll(wal, 0o755); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "catalog.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("these are notes, not a database\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"--wal-dir", wal, "--warehouse", filepath.Join(dir, "warehouse")}
	cases := []struct {
		name   string
		env    []string
		args   []string
		want   string
		secret string
	}{
		{"not_a_database_once", nil, append([]string{"--once", "--catalog", "sqlite:" + text}, base...), "not a SQLite database", ""},
		{"not_a_database", nil, append([]string{"--catalog", "sqlite:" + text}, base...), "not a SQLite database", ""},
		{"missing_directory_by_env", []string{"SIGLAKE_CATALOG=sqlite:" + filepath.Join(dir, "no", "such", "catalog.db")},
			append([]string{"--once"}, base...), filepath.Join(dir, "no", "such") + " does not exist", ""},
	}
	if !testing.Short() {
		u, err := url.Parse(testenv.Postgres(t))
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword(u.User.Username(), "wrong-e2e-password")
		cases = append(cases, struct {
			name   string
			env    []string
			args   []string
			want   string
			secret string
		}{"postgres_wrong_password_once", nil, append([]string{"--once", "--catalog", u.String()}, base...),
			"PostgreSQL refused the credentials", "wrong-e2e-password"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			out := startFails(t, c.env, c.args...)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("exited after %v; a configuration error must stop it at once", took.Round(time.Millisecond))
			}
			mustContain(t, out, "--catalog", "SIGLAKE_CATALOG", "accepted: sqlite:PATH", c.want)
			if strings.Contains(out, "catalog unreachable") {
				t.Errorf("a configuration error was reported as an unreachable catalog:\n%s", tail(out, 2000))
			}
			if c.secret != "" && strings.Contains(out, c.secret) {
				t.Errorf("output holds the password:\n%s", tail(out, 2000))
			}
		})
	}
}
