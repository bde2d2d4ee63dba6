package lease_test

import (
	"fmt"

	"github.com/siglake/siglake/gossip/lease"
)

// Owner is the pure lease rule: every process computes the same owner from
// the same members.
func ExampleOwner() {
	members := []string{"siglake-ingest-0", "siglake-ingest-1", "siglake-ingest-2"}
	fmt.Println(lease.Owner("logs.events", members))
	fmt.Println(lease.Owner("logs.events", []string{"siglake-ingest-2", "siglake-ingest-0", "siglake-ingest-1"}))
	// Output:
	// siglake-ingest-0
	// siglake-ingest-0
}
