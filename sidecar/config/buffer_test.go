package config

import (
	"strings"
	"testing"
	"time"
)

// TestBufferOptions: the WAL buffer is off by default, a bare port means loopback, and it never
// shares the metrics listener.
func TestBufferOptions(t *testing.T) {
	load := func(env map[string]string) (Config, error) {
		return Load(nil, func(k string) string { return env[k] })
	}
	c, err := load(nil)
	if err != nil || c.BufferAddr != "" || c.BufferRetainAfterDrain != 30*time.Second || c.BufferMaxReaders != 4 || c.BufferMaxResponseBytes != 256<<20 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	for in, want := range map[string]string{"9465": "127.0.0.1:9465", "0.0.0.0:9465": "0.0.0.0:9465", ":9465": ":9465", "[::1]:9465": "[::1]:9465"} {
		if c, err := load(map[string]string{"SIGLAKE_BUFFER_ADDR": in, "SIGLAKE_BUFFER_TOKEN_FILE": "/run/tokens"}); err != nil || c.BufferAddr != want {
			t.Errorf("SIGLAKE_BUFFER_ADDR=%s: %q %v, want %q", in, c.BufferAddr, err, want)
		}
	}
	for _, bad := range []map[string]string{
		{"SIGLAKE_BUFFER_ADDR": "localhost"}, {"SIGLAKE_BUFFER_ADDR": "99999"},
		{"SIGLAKE_BUFFER_ADDR": "127.0.0.1:9464"},                                  // the default --http-addr
		{"SIGLAKE_BUFFER_ADDR": "127.0.0.1:9465", "SIGLAKE_CATALOG_CLAIM": "true"}, // a shared WAL root: every pod would serve every stream
		{"SIGLAKE_BUFFER_MAX_READERS": "0"}, {"SIGLAKE_BUFFER_MAX_RESPONSE_MB": "0"}, {"SIGLAKE_BUFFER_RETAIN_AFTER_DRAIN": "-1s"},
	} {
		if _, err := load(bad); err == nil || !strings.Contains(err.Error(), "SIGLAKE_BUFFER_") {
			t.Errorf("%v: %v, want an error naming the option", bad, err)
		}
	}
	if c, err := load(map[string]string{"SIGLAKE_BUFFER_RETAIN_AFTER_DRAIN": "0s"}); err != nil || c.BufferRetainAfterDrain != 0 {
		t.Errorf("retain 0: %v %v", c.BufferRetainAfterDrain, err)
	}
}

// TestBufferAuthOptions: a WAL buffer reachable beyond loopback needs credentials (a token file
// or a client CA) or the explicit opt-out, and the error names the options and what is accepted;
// loopback needs none; the TLS files go together.
func TestBufferAuthOptions(t *testing.T) {
	load := func(env map[string]string) (Config, error) {
		return Load(nil, func(k string) string { return env[k] })
	}
	for _, addr := range []string{"0.0.0.0:9465", ":9465", "10.1.2.3:9465", "[::]:9465", "buffer.example:9465"} {
		_, err := load(map[string]string{"SIGLAKE_BUFFER_ADDR": addr})
		if err == nil {
			t.Fatalf("%s without credentials is accepted", addr)
		}
		for _, name := range []string{"SIGLAKE_BUFFER_ADDR", "SIGLAKE_BUFFER_TOKEN_FILE", "SIGLAKE_BUFFER_TLS_CLIENT_CA_FILE", "SIGLAKE_BUFFER_INSECURE_NO_AUTH", "accepted: a loopback address"} {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("%s: the error does not name %s: %v", addr, name, err)
			}
		}
	}
	for _, ok := range []map[string]string{
		{"SIGLAKE_BUFFER_ADDR": "9465"}, {"SIGLAKE_BUFFER_ADDR": "127.0.0.1:9465"}, {"SIGLAKE_BUFFER_ADDR": "[::1]:9465"}, {"SIGLAKE_BUFFER_ADDR": "localhost:9465"},
		{"SIGLAKE_BUFFER_ADDR": "0.0.0.0:9465", "SIGLAKE_BUFFER_TOKEN_FILE": "/run/tokens"},
		{"SIGLAKE_BUFFER_ADDR": "0.0.0.0:9465", "SIGLAKE_BUFFER_TLS_CERT_FILE": "c", "SIGLAKE_BUFFER_TLS_KEY_FILE": "k", "SIGLAKE_BUFFER_TLS_CLIENT_CA_FILE": "ca"},
		{"SIGLAKE_BUFFER_ADDR": "0.0.0.0:9465", "SIGLAKE_BUFFER_INSECURE_NO_AUTH": "true"},
		{}, // off
	} {
		if _, err := load(ok); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	for _, bad := range []map[string]string{
		{"SIGLAKE_BUFFER_TLS_CERT_FILE": "c"}, {"SIGLAKE_BUFFER_TLS_KEY_FILE": "k"},
		{"SIGLAKE_BUFFER_TLS_CLIENT_CA_FILE": "ca"},
		{"SIGLAKE_BUFFER_INSECURE_NO_AUTH": "maybe"},
	} {
		if _, err := load(bad); err == nil || !strings.Contains(err.Error(), "SIGLAKE_BUFFER_") {
			t.Errorf("%v: %v, want an error naming the option", bad, err)
		}
	}
}
