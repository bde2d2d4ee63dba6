package membership

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/gossip"
	gossipkeys "github.com/siglake/siglake/gossip/keys"
)

// TestWatchKeysRotates: the key file is re-read while the member runs; each rotation step is
// installed, and a broken file keeps the keys in use and is logged once.
func TestWatchKeysRotates(t *testing.T) {
	oldKey, newKey := bytes.Repeat([]byte{3}, 32), bytes.Repeat([]byte{4}, 24)
	b64 := base64.StdEncoding.EncodeToString
	path := filepath.Join(t.TempDir(), "keys")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path+".tmp", []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	write(b64(oldKey) + "\n")
	cfg := gossip.DefaultConfig()
	cfg.NodeName, cfg.BindAddr, cfg.BindPort, cfg.Keys = "watcher", "127.0.0.1", 0, [][]byte{oldKey}
	c, err := gossip.Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	core, logs := observer.New(zapcore.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go WatchKeys(ctx, c, path, 10*time.Millisecond, zap.New(core))

	wait := func(want gossipkeys.State) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for c.Keys() != want {
			if time.Now().After(deadline) {
				t.Fatalf("keyring %+v, want %+v", c.Keys(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	write(b64(oldKey) + "\n" + b64(newKey) + "\n")
	wait(gossipkeys.State{Keys: 2, Primary: gossipkeys.Fingerprint(oldKey)})
	write(b64(newKey) + "\n" + b64(oldKey) + "\n")
	wait(gossipkeys.State{Keys: 2, Primary: gossipkeys.Fingerprint(newKey)})
	write("not a key\n")
	// Until the watcher has read it (a loaded machine may take long past a few periods), then a
	// few more periods in which it must not log again.
	for deadline := time.Now().Add(5 * time.Second); logs.FilterMessage("gossip key file not applied; the keys in use stay").Len() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	wait(gossipkeys.State{Keys: 2, Primary: gossipkeys.Fingerprint(newKey)})
	if n := logs.FilterMessage("gossip key file not applied; the keys in use stay").Len(); n != 1 {
		t.Fatalf("a broken key file was logged %d times, want once", n)
	}
	write(b64(newKey) + "\n")
	wait(gossipkeys.State{Keys: 1, Primary: gossipkeys.Fingerprint(newKey)})
	if n := logs.FilterMessage("gossip keys reloaded").Len(); n != 3 {
		t.Fatalf("%d reloads logged, want 3", n)
	}
}

// TestPrimaryKeyMetric: the fingerprint of the key sent with is exported, so the switch step of a
// rotation can be checked on every pod; the key itself never is.
func TestPrimaryKeyMetric(t *testing.T) {
	key := bytes.Repeat([]byte{5}, 32)
	cfg := gossip.DefaultConfig()
	cfg.NodeName, cfg.BindAddr, cfg.BindPort, cfg.Keys = "metric", "127.0.0.1", 0, [][]byte{key}
	c, err := gossip.Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(Collector(c))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fams {
		if f.GetName() != "siglake_gossip_primary_key_info" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				got = append(got, l.GetName()+"="+l.GetValue())
			}
		}
	}
	want := "fingerprint=" + gossipkeys.Fingerprint(key)
	if len(got) != 1 || got[0] != want {
		t.Fatalf("siglake_gossip_primary_key_info labels %v, want [%s]", got, want)
	}
	if strings.Contains(want, base64.StdEncoding.EncodeToString(key)) || len(gossipkeys.Fingerprint(key)) != 16 {
		t.Fatalf("fingerprint %q is not 8 bytes of hex", want)
	}
}
