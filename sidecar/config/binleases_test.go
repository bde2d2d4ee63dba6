package config

import (
	"strings"
	"testing"
	"time"
)

// TestBinLeaseOptions: leases are on by default with the design's values; the bounds load and
// values past them fail naming the option and what is accepted.
func TestBinLeaseOptions(t *testing.T) {
	c, err := loadWith(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.BinLeases || c.BinLeaseDuration != 2*time.Minute || c.BinLeaseOwnerWait != 10*time.Second {
		t.Fatalf("defaults: leases %v duration %v owner wait %v", c.BinLeases, c.BinLeaseDuration, c.BinLeaseOwnerWait)
	}
	c, err = loadWith(nil, map[string]string{"SIGLAKE_BIN_LEASES": "false", "SIGLAKE_BIN_LEASE_DURATION": "10m", "SIGLAKE_BIN_LEASE_OWNER_WAIT": "0"})
	if err != nil || c.BinLeases || c.BinLeaseDuration != 10*time.Minute || c.BinLeaseOwnerWait != 0 {
		t.Fatalf("from the environment: %v leases %v duration %v owner wait %v", err, c.BinLeases, c.BinLeaseDuration, c.BinLeaseOwnerWait)
	}
	for _, ok := range [][]string{{"--bin-lease-duration", "10s"}, {"--bin-lease-owner-wait", "10m"}, {"--bin-lease-owner-wait", "500ms"}} {
		if _, err := loadWith(ok, nil); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bin-lease-duration", "9s"}, "SIGLAKE_BIN_LEASE_DURATION: accepted: a duration from 10s to 10m"},
		{[]string{"--bin-lease-duration", "11m"}, "SIGLAKE_BIN_LEASE_DURATION: accepted: a duration from 10s to 10m"},
		{[]string{"--bin-lease-duration", "0"}, "SIGLAKE_BIN_LEASE_DURATION: accepted"},
		{[]string{"--bin-lease-owner-wait", "11m"}, "SIGLAKE_BIN_LEASE_OWNER_WAIT: accepted: a duration from 0s to 10m"},
		{[]string{"--bin-lease-owner-wait", "-1s"}, "SIGLAKE_BIN_LEASE_OWNER_WAIT: accepted"},
		{[]string{"--bin-leases", "maybe"}, "--bin-leases / SIGLAKE_BIN_LEASES"},
	} {
		_, err := loadWith(tc.args, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
