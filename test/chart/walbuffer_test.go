package chart

import (
	"strings"
	"testing"
)

// TestWALBufferValue: compactor.walBuffer.enabled renders SIGLAKE_BUFFER_ADDR on every pod
// address at compactor.walBuffer.port, the container port siglake-buffer and the same port on
// the headless Service, and the binary accepts what it renders; off (the default) renders none of
// them, so the buffer stays off.
func TestWALBufferValue(t *testing.T) {
	dir := chartDir(t)
	off := decodeAll(t, mustRender(t, dir))
	c := sidecarContainer(t, off)
	if hasPort(*c, "siglake-buffer") || contains(envNames(c), "SIGLAKE_BUFFER_ADDR") {
		t.Fatalf("the default renders the buffer: ports %v env %v", c.Ports, envNames(c))
	}
	for _, s := range off.services {
		if servicePort(s, "siglake-buffer") {
			t.Fatalf("the default Service %s has the buffer port", s.Name)
		}
	}

	on := decodeAll(t, mustRender(t, dir, "--set", "compactor.walBuffer.enabled=true", "--set", "compactor.walBuffer.port=9470"))
	c = sidecarContainer(t, on)
	env := resolveEnv(t, c)
	if env["SIGLAKE_BUFFER_ADDR"] != "0.0.0.0:9470" {
		t.Fatalf("SIGLAKE_BUFFER_ADDR=%q", env["SIGLAKE_BUFFER_ADDR"])
	}
	if !hasPort(*c, "siglake-buffer") {
		t.Fatalf("no container port siglake-buffer: %v", c.Ports)
	}
	found := false
	for _, s := range on.services {
		for _, p := range s.Spec.Ports {
			if p.Name == "siglake-buffer" {
				found = p.Port == 9470 && p.TargetPort.StrVal == "siglake-buffer"
			}
		}
	}
	if !found {
		t.Fatal("the headless Service has no siglake-buffer port 9470")
	}
	cfg, err := loadEnv(t, env)
	if err != nil || cfg.BufferAddr != "0.0.0.0:9470" {
		t.Fatalf("the binary reads %q: %v", cfg.BufferAddr, err)
	}

	// The metrics port is not the buffer's: the binary refuses the pair at start, by name.
	same := decodeAll(t, mustRender(t, dir, "--set", "compactor.walBuffer.enabled=true", "--set", "compactor.walBuffer.port=9464"))
	if _, err := loadEnv(t, resolveEnv(t, sidecarContainer(t, same))); err == nil || !strings.Contains(err.Error(), "SIGLAKE_BUFFER_ADDR") {
		t.Fatalf("buffer on the metrics port: %v", err)
	}
	if _, err := render(t, dir, "--set", "compactor.walBuffer.port=0"); err == nil {
		t.Fatal("port 0 renders")
	}
}
