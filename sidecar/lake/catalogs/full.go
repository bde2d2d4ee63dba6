package catalogs

import (
	"errors"
	"strings"

	"github.com/lib/pq"
)

// IsFull reports whether the catalog refused a connection because it has none left: PostgreSQL's
// too_many_connections (53300: "sorry, too many clients already", "remaining connection slots
// are reserved ..."), also when a wrapper kept only its text. Such a refusal comes before any
// statement runs, so nothing was applied and the call may be repeated as is. SQLite has no
// connection limit; a REST catalog's 429 is waited out by its transport (rest.go).
func IsFull(err error) bool {
	if err == nil {
		return false
	}
	var pe *pq.Error
	if errors.As(err, &pe) {
		return pe.Code == "53300"
	}
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"too many clients", "too many connections", "remaining connection slots are reserved"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
