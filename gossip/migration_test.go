package gossip

import (
	"strings"
	"testing"
	"time"
)

// TestKeyMigrationSteps: keys come to a keyless cluster in rolling restarts
// without splitting it: at each step, a member of the previous step and one
// of the next form one cluster with one owner per table. The steps are no
// key, "accept" (plaintext sent, both accepted), "send" (encrypted sent,
// both accepted), then the key alone.
func TestKeyMigrationSteps(t *testing.T) {
	tables := tableNames(30)
	key := [][]byte{testKey(5, 32)}
	step := func(keys [][]byte, migration string) Config {
		c := securedConfig(keys, "")("x")
		c.KeyMigration = migration
		return c
	}
	steps := []struct {
		name string
		cfg  Config
	}{
		{"none", step(nil, "")},
		{"accept", step(key, KeyMigrationAccept)},
		{"send", step(key, KeyMigrationSend)},
		{"keyed", step(key, "")},
	}
	for i := 0; i+1 < len(steps); i++ {
		old, next := steps[i], steps[i+1]
		t.Run(old.name+" with "+next.name, func(t *testing.T) {
			tc := startCluster(t, 2, func(name string, join ...string) Config {
				c := old.cfg
				if len(join) > 0 {
					c = next.cfg
				}
				c.NodeName, c.Join = name, join
				return c
			})
			tc.waitConverged(tables, raceSlowdown*20*time.Second)
			time.Sleep(fastConfig("x").SettlePeriod + 100*time.Millisecond)
			tc.assertOneOwnerEach(tables)
			// And they stay one cluster over push/pulls and probes.
			time.Sleep(raceSlowdown * 2 * time.Second)
			for _, m := range tc.live() {
				if n := len(m.Members()); n != 2 {
					t.Fatalf("%s sees %d members after %s", m.Name(), n, raceSlowdown*2*time.Second)
				}
			}
			tc.assertOneOwnerEach(tables)
		})
	}
}

func TestKeyMigrationValidate(t *testing.T) {
	c := fastConfig("a")
	c.Keys = [][]byte{testKey(1, 16)}
	c.KeyMigration = "both"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "SIGLAKE_GOSSIP_KEY_MIGRATION") || !strings.Contains(err.Error(), "accepted") {
		t.Fatalf("unknown migration step: %v", err)
	}
}
