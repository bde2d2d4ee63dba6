package gossip

import (
	"strings"
	"testing"
	"time"
)

func envOf(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func TestConfigFromEnv(t *testing.T) {
	base := DefaultConfig()
	c, err := ConfigFromEnv(base, envOf(map[string]string{
		EnvNodeName:        "siglake-ingest-2",
		EnvBind:            "10.1.2.3:8000",
		EnvAdvertise:       "10.1.2.3",
		EnvJoin:            " siglake-gossip.ns.svc:8000, 10.1.2.4 ,,",
		EnvSettleSecs:      "2.5",
		EnvRejoinSecs:      "10",
		EnvProbeIntervalMs: "2000",
		EnvProbeTimeoutMs:  "800",
		EnvSuspicionMult:   "5",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeName != "siglake-ingest-2" || c.BindAddr != "10.1.2.3" || c.BindPort != 8000 ||
		c.AdvertiseAddr != "10.1.2.3" || c.AdvertisePort != 0 ||
		strings.Join(c.Join, "|") != "siglake-gossip.ns.svc:8000|10.1.2.4" ||
		c.SettlePeriod != 2500*time.Millisecond || c.RejoinInterval != 10*time.Second ||
		c.ProbeInterval != 2*time.Second || c.ProbeTimeout != 800*time.Millisecond || c.SuspicionMult != 5 {
		t.Fatalf("parsed %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// Defaults survive an empty environment.
	c, err = ConfigFromEnv(base, envOf(nil))
	if err != nil || c.BindPort != DefaultPort || c.BindAddr != "0.0.0.0" || c.SettlePeriod != 5*time.Second {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = ConfigFromEnv(base, envOf(map[string]string{EnvBind: ":9000"}))
	if err != nil || c.BindAddr != "0.0.0.0" || c.BindPort != 9000 {
		t.Fatalf(":port: %+v %v", c, err)
	}
	c, err = ConfigFromEnv(base, envOf(map[string]string{EnvBind: "OFF"}))
	if err != nil || !c.Disabled {
		t.Fatalf("off: %+v %v", c, err)
	}
	c, err = ConfigFromEnv(base, envOf(map[string]string{EnvBind: "[::1]:7000", EnvSettleSecs: "0"}))
	if err != nil || c.BindAddr != "::1" || c.BindPort != 7000 || c.SettlePeriod != 0 {
		t.Fatalf("v6: %+v %v", c, err)
	}
}

func TestConfigFromEnvErrorsNameTheVariable(t *testing.T) {
	for k, v := range map[string]string{
		EnvBind:            "pod-name:7946",
		EnvAdvertise:       ":7946",
		EnvSettleSecs:      "-1",
		EnvRejoinSecs:      "0",
		EnvProbeIntervalMs: "fast",
		EnvProbeTimeoutMs:  "0",
		EnvSuspicionMult:   "0",
	} {
		_, err := ConfigFromEnv(DefaultConfig(), envOf(map[string]string{k: v}))
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%q: error %v does not name the variable", k, v, err)
		}
	}
}

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
