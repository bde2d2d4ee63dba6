package gossip

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	bad := map[string]func(*Config){
		"node name":         func(c *Config) { c.NodeName = "" },
		"bind port":         func(c *Config) { c.BindPort = 70000 },
		"bind address":      func(c *Config) { c.BindAddr = "localhost" },
		"advertise address": func(c *Config) { c.AdvertiseAddr = "pod" },
		"join entry":        func(c *Config) { c.Join = []string{"a:b:c:d:x"} },
		"probe timeout":     func(c *Config) { c.ProbeTimeout = 2 * time.Second },
		"suspicion":         func(c *Config) { c.SuspicionMult = 0 },
		"settle":            func(c *Config) { c.SettlePeriod = -time.Second },
		"rejoin":            func(c *Config) { c.RejoinInterval = 0 },
	}
	for want, mut := range bad {
		c := DefaultConfig()
		mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	c := DefaultConfig()
	c.Disabled = true
	c.ProbeInterval = 0
	if err := c.Validate(); err != nil {
		t.Fatalf("disabled gossip needs no timings: %v", err)
	}
}
