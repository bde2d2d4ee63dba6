package gossip

import (
	"slices"
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

func TestSplitJoin(t *testing.T) {
	cases := []struct {
		in   string
		host string
		port int
		bad  bool
	}{
		{"10.0.0.1:7000", "10.0.0.1", 7000, false},
		{"10.0.0.1", "10.0.0.1", 7946, false},
		{"siglake-gossip.default.svc.cluster.local", "siglake-gossip.default.svc.cluster.local", 7946, false},
		{"siglake-gossip:8000", "siglake-gossip", 8000, false},
		{"[fd00::1]:7000", "fd00::1", 7000, false},
		{"fd00::1", "fd00::1", 7946, false},
		{"[fd00::1]", "fd00::1", 7946, false},
		{"host:99999", "", 0, true},
		{"host:x", "", 0, true},
		{"", "", 0, true},
		{"a b", "", 0, true},
	}
	for _, c := range cases {
		h, p, err := splitJoin(c.in, DefaultPort)
		if (err != nil) != c.bad || (!c.bad && (h != c.host || p != c.port)) {
			t.Errorf("splitJoin(%q) = %q %d %v", c.in, h, p, err)
		}
	}
}

func TestParseJoin(t *testing.T) {
	for in, want := range map[string][]string{
		"":                       nil,
		" , ,":                   nil,
		"a:7946":                 {"a:7946"},
		" a:1 ,, siglake-peers ": {"a:1", "siglake-peers"},
	} {
		if got := ParseJoin(in); !slices.Equal(got, want) {
			t.Errorf("ParseJoin(%q) = %q, want %q", in, got, want)
		}
	}
}
