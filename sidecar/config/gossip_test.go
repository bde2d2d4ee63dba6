package config

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGossipKeyFileAndLabel(t *testing.T) {
	dir := t.TempDir()
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 16)
	good := filepath.Join(dir, "keys")
	if err := os.WriteFile(good, []byte(base64.StdEncoding.EncodeToString(k1)+"\n"+base64.StdEncoding.EncodeToString(k2)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte(base64.StdEncoding.EncodeToString([]byte("short"))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SIGLAKE_GOSSIP_BIND": "127.0.0.1:0", "SIGLAKE_GOSSIP_KEY_FILE": good, "SIGLAKE_GOSSIP_CLUSTER_LABEL": "prod"}
	c, err := Load(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	keys, err := GossipKeys(c)
	if err != nil || len(keys) != 2 || !bytes.Equal(keys[0], k1) || !bytes.Equal(keys[1], k2) {
		t.Fatalf("GossipKeys: %d keys, %v; want the file's two, in order", len(keys), err)
	}
	gc, ok, err := GossipConfig(c, "", "")
	if err != nil || !ok || gc.Label != "prod" {
		t.Fatalf("GossipConfig: label %q, ok %v, %v", gc.Label, ok, err)
	}
	for _, path := range []string{bad, filepath.Join(dir, "absent")} {
		_, err := GossipKeys(Config{GossipKeyFile: path})
		if err == nil || !strings.Contains(err.Error(), "--gossip-key-file / SIGLAKE_GOSSIP_KEY_FILE") || !strings.Contains(err.Error(), "16, 24 or 32 bytes") {
			t.Fatalf("GossipKeys(%s): %v, want the option and what is accepted", filepath.Base(path), err)
		}
	}
	if keys, err := GossipKeys(Config{}); keys != nil || err != nil {
		t.Fatalf("no key file: %v, %v", keys, err)
	}
	env["SIGLAKE_GOSSIP_CLUSTER_LABEL"] = strings.Repeat("l", 256)
	if _, err := Load(nil, func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "SIGLAKE_GOSSIP_CLUSTER_LABEL") {
		t.Fatalf("a 256-byte label: %v, want an error naming SIGLAKE_GOSSIP_CLUSTER_LABEL", err)
	}
}

func TestGossipKeyMigrationOption(t *testing.T) {
	env := map[string]string{"SIGLAKE_GOSSIP_BIND": "127.0.0.1:0", "SIGLAKE_GOSSIP_KEY_FILE": "/keys", "SIGLAKE_GOSSIP_KEY_MIGRATION": "accept"}
	c, err := Load(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if gc, _, err := GossipConfig(c, "", ""); err != nil || gc.KeyMigration != "accept" {
		t.Fatalf("GossipConfig: migration %q, %v", gc.KeyMigration, err)
	}
	c, err = Load([]string{"--gossip-key-migration", "send"}, func(k string) string { return env[k] })
	if err != nil || c.GossipKeyMigration != "send" {
		t.Fatalf("flag: %q, %v", c.GossipKeyMigration, err)
	}
	env["SIGLAKE_GOSSIP_KEY_MIGRATION"] = "both"
	if _, err := Load(nil, func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "SIGLAKE_GOSSIP_KEY_MIGRATION") || !strings.Contains(err.Error(), "accept, send or empty") {
		t.Fatalf("unknown step: %v, want the option and what is accepted", err)
	}
	env["SIGLAKE_GOSSIP_KEY_MIGRATION"], env["SIGLAKE_GOSSIP_KEY_FILE"] = "send", ""
	if _, err := Load(nil, func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "SIGLAKE_GOSSIP_KEY_FILE") {
		t.Fatalf("migration without a key: %v, want an error naming the key file", err)
	}
}
