package gossip_test

import (
	"fmt"
	"time"

	"github.com/siglake/siglake/gossip"
)

// The sidecar's use (config.GossipConfig builds the Config from the process
// options): start, ask Owns before each unit of maintenance work, leave on
// shutdown. Here gossip is disabled, so the process owns every table.
func ExampleStart() {
	cfg := gossip.DefaultConfig()
	cfg.NodeName, cfg.Disabled = "siglake-ingest-0", true
	var err error
	if cfg.Roles, err = gossip.RolesFor("all"); err != nil {
		fmt.Println(err)
		return
	}
	c, err := gossip.Start(cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Shutdown()

	for _, table := range []string{"logs.events", "logs.audit"} {
		if c.Owns(table) {
			fmt.Println("maintaining", table)
		}
	}
	owner, _ := c.Owner("logs.events")
	fmt.Println("owner:", owner, "owned tables:", c.Stats().OwnedTables)
	_ = c.Leave(5 * time.Second)
	fmt.Println("after leave:", c.Owns("logs.events"))
	// Output:
	// maintaining logs.events
	// maintaining logs.audit
	// owner: siglake-ingest-0 owned tables: 2
	// after leave: false
}
