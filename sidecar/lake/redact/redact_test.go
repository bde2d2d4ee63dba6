package redact

import (
	"strings"
	"testing"
)

func TestRedactNeverReturnsASecret(t *testing.T) {
	for _, c := range []struct {
		uri, secret, want string
	}{
		{"postgres://u:s3cret@h:5432/db?sslmode=disable", "s3cret", "postgres://u:xxxxx@h:5432/db?sslmode=disable"},
		// Reserved characters in the password: the URI does not parse, or parses wrongly.
		{"postgres://u:p%ss@h/db", "p%ss", "postgres://xxxxx@h/<redacted>"},
		{"postgres://u:p%ss@h:5432/db?sslmode=disable", "p%ss", "postgres://xxxxx@h:5432/<redacted>"},
		{"postgres://u:p/ss@h/db", "p/ss", "postgres://xxxxx@h/<redacted>"},
		{"postgres://u:12#3@h/db", "12#3", "postgres://xxxxx@h/<redacted>"},
		{"postgres://u:1?ss@h/db", "1?ss", "postgres://xxxxx@h/<redacted>"},
		{"postgres://u:p@ss@h/db", "p@ss", "postgres://xxxxx@h/<redacted>"},
		// A # or ? before the last @, or a second @: the parser would take part of the password
		// for the host.
		{"postgres://u:p@ss#word@h/db", "ss", "postgres://xxxxx@h/<redacted>"},
		{"postgres://u:p?ss@word@h/db", "word", "postgres://xxxxx@h/<redacted>"},
		{"postgres://u:p#ss@wd@h:5432/db", "wd", "postgres://xxxxx@h:5432/<redacted>"},
		{"postgres://u:pw@ss@/db?host=/cloudsql/p:r:i", "ss", "postgres://xxxxx@<redacted>"},
		{"postgres://u:pw@/db?host=/cloudsql/p:r:i", "pw", "postgres://u:xxxxx@/db?host=%2Fcloudsql%2Fp%3Ar%3Ai"},
		{"postgres://u:p ss@h%zz/db", "p ss", "postgres://xxxxx@<redacted>"},
		{"%%%:u:pw@h", "pw", "<redacted>"},
		// Secrets in the query and in keyword DSNs.
		{"postgres://h/db?password=hunter2&sslmode=disable", "hunter2", "postgres://h/db?password=xxxxx&sslmode=disable"},
		{"rest+https://cat.example/v1?token=tok123", "tok123", "rest+https://cat.example/v1?token=xxxxx"},
		{"rest+https://cat.example/v1?client_secret=cs1&x=1", "cs1", "rest+https://cat.example/v1?client_secret=xxxxx&x=1"},
		{"postgres://h/db?password=a%zz", "a%zz", "postgres://h/db?xxxxx"},
		{"host=h user=u password=hunter2 dbname=d", "hunter2", "host=h user=u password=xxxxx dbname=d"},
		{"host=h password='p w' dbname=d", "p w", "host=h password=xxxxx dbname=d"},
		// A keyword value runs to the next unescaped whitespace: & and ; are part of it.
		{"host=h password=ab;cd dbname=d", "cd", "host=h password=xxxxx dbname=d"},
		{"host=h password=ab&cd dbname=d", "cd", "host=h password=xxxxx dbname=d"},
		{`host=h password=a\ bcd dbname=d`, "bcd", "host=h password=xxxxx dbname=d"},
		{`host=h password='a\' bcd' dbname=d`, "bcd", "host=h password=xxxxx dbname=d"},
		{`host=h password=ab\`, "ab", "host=h password=xxxxx"},
		{"mysql:u:pw@tcp(h)/db", "pw", "mysql:xxxxx@<redacted>"},
		// Nothing secret: unchanged.
		{"sqlite:/var/lib/siglake/catalog.db", "", "sqlite:/var/lib/siglake/catalog.db"},
		{"postgres://u@h/db", "", "postgres://u@h/db"},
		{"rest+http://127.0.0.1:8181", "", "rest+http://127.0.0.1:8181"},
	} {
		got := URI(c.uri)
		if got != c.want {
			t.Errorf("URI(%q) = %q, want %q", c.uri, got, c.want)
		}
		if c.secret != "" && strings.Contains(got, c.secret) {
			t.Errorf("URI(%q) = %q holds the secret %q", c.uri, got, c.secret)
		}
	}
}
