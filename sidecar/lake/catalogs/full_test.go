package catalogs

import (
	"errors"
	"fmt"
	"testing"

	"github.com/lib/pq"
)

// IsFull: a refused connection (53300, or its text through a wrapper that dropped the type) is
// full; other PostgreSQL errors, other texts and nil are not.
func TestIsFull(t *testing.T) {
	for _, c := range []struct {
		err  error
		full bool
	}{
		{fmt.Errorf("load table: %w", &pq.Error{Code: "53300", Message: "sorry, too many clients already"}), true},
		{&pq.Error{Code: "53300", Message: "remaining connection slots are reserved for roles with the SUPERUSER attribute"}, true},
		{fmt.Errorf("load table: %v", &pq.Error{Code: "53300", Message: "sorry, too many clients already"}), true},
		{errors.New("Error 1040: Too many connections"), true},
		{&pq.Error{Code: "57P03", Message: "the database system is starting up"}, false},
		{&pq.Error{Code: "53200", Message: "out of memory"}, false},
		{errors.New("connection refused"), false},
		{nil, false},
	} {
		if got := IsFull(c.err); got != c.full {
			t.Errorf("IsFull(%v) = %v, want %v", c.err, got, c.full)
		}
	}
}
