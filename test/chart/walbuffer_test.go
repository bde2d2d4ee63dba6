package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/siglake/siglake/sidecar/buffer/reader"
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

	on := decodeAll(t, mustRender(t, dir, "--set", "compactor.walBuffer.enabled=true", "--set", "compactor.walBuffer.port=9470", "--set", "compactor.walBuffer.tokenSecret.name=tokens"))
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
	same := decodeAll(t, mustRender(t, dir, "--set", "compactor.walBuffer.enabled=true", "--set", "compactor.walBuffer.port=9464", "--set", "compactor.walBuffer.tokenSecret.name=tokens"))
	if _, err := loadEnv(t, resolveEnv(t, sidecarContainer(t, same))); err == nil || !strings.Contains(err.Error(), "SIGLAKE_BUFFER_ADDR") {
		t.Fatalf("buffer on the metrics port: %v", err)
	}
	if _, err := render(t, dir, "--set", "compactor.walBuffer.port=0"); err == nil {
		t.Fatal("port 0 renders")
	}
}

// bufferVolume finds the pod volume and the sidecar's mount of name (nil when absent).
func bufferVolume(t *testing.T, r rendered, name string) (*corev1.Volume, *corev1.VolumeMount) {
	t.Helper()
	spec := r.statefulSets[0].Spec.Template.Spec
	var vol *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			vol = &spec.Volumes[i]
		}
	}
	var mount *corev1.VolumeMount
	c := container(spec, "siglake-compactor")
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == name {
			mount = &c.VolumeMounts[i]
		}
	}
	return vol, mount
}

// TestWALBufferAuthRenders: the buffer's port is on the headless Service only when the buffer
// and its authentication (a token, or mutual TLS) are both on; the token Secret is created from
// values or referenced, mounted as a read-only directory (a rotation reaches running pods), and
// the binary accepts the environment and reads the token file the chart wrote.
func TestWALBufferAuthRenders(t *testing.T) {
	dir := chartDir(t)
	const tok1, tok2 = "chart-token-0123456789", "chart-token-abcdefghij"
	on := []string{"--set", "compactor.walBuffer.enabled=true"}
	cases := []struct {
		name string
		args []string
		// service: the Service has the buffer port; secret: the token Secret mounted ("" none),
		// created: its rendered content when the chart creates it; file: the key in the Secret.
		service               bool
		secret, file, created string
		tls, clientCA         bool
		addr                  string
	}{
		{"token from values", []string{"--set-string", "compactor.walBuffer.token=" + tok1 + "\n" + tok2}, true,
			releaseName + "-siglake-compactor-buffer", "tokens", tok1 + "\n" + tok2 + "\n", false, false, "0.0.0.0:9465"},
		{"existing Secret wins over token", []string{"--set", "compactor.walBuffer.token=" + tok1, "--set", "compactor.walBuffer.tokenSecret.name=readers",
			"--set", "compactor.walBuffer.tokenSecret.key=buffer.tokens"}, true, "readers", "buffer.tokens", "", false, false, "0.0.0.0:9465"},
		{"token over TLS", []string{"--set", "compactor.walBuffer.tokenSecret.name=readers", "--set", "compactor.walBuffer.tls.secretName=buffer-tls"},
			true, "readers", "tokens", "", true, false, "0.0.0.0:9465"},
		{"mutual TLS without a token", []string{"--set", "compactor.walBuffer.tls.secretName=buffer-tls", "--set", "compactor.walBuffer.tls.clientCA=true"},
			true, "", "", "", true, true, "0.0.0.0:9465"},
		{"insecure opt-out: no Service port", []string{"--set", "compactor.walBuffer.insecureNoAuth=true"}, false, "", "", "", false, false, "0.0.0.0:9465"},
		{"loopback needs nothing and gets no port", []string{"--set", "compactor.walBuffer.bind=127.0.0.1"}, false, "", "", "", false, false, "127.0.0.1:9465"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := decodeAll(t, mustRender(t, dir, append(on, c.args...)...))
			sc := sidecarContainer(t, r)
			env := resolveEnv(t, sc)
			eq(t, "SIGLAKE_BUFFER_ADDR", env["SIGLAKE_BUFFER_ADDR"], c.addr)
			got := false
			for _, s := range r.services {
				got = got || servicePort(s, "siglake-buffer")
			}
			if got != c.service {
				t.Errorf("the Service has the buffer port: %v, want %v", got, c.service)
			}
			if hasPort(*sc, "siglake-buffer") != (c.addr != "127.0.0.1:9465") {
				t.Errorf("container port siglake-buffer: %v for %s", hasPort(*sc, "siglake-buffer"), c.addr)
			}
			eq(t, "SIGLAKE_BUFFER_INSECURE_NO_AUTH", env["SIGLAKE_BUFFER_INSECURE_NO_AUTH"] == "true", strings.Contains(c.name, "insecure"))
			vol, mount := bufferVolume(t, r, "siglake-buffer-token")
			if c.secret == "" {
				if vol != nil || mount != nil || env["SIGLAKE_BUFFER_TOKEN_FILE"] != "" {
					t.Errorf("no token wanted: volume %v, mount %v, file %q", vol, mount, env["SIGLAKE_BUFFER_TOKEN_FILE"])
				}
			} else {
				if vol == nil || vol.Secret == nil || vol.Secret.SecretName != c.secret || vol.Secret.DefaultMode == nil || *vol.Secret.DefaultMode&0o004 == 0 {
					t.Fatalf("token volume %+v, want Secret %s readable by the sidecar's uid", vol, c.secret)
				}
				if mount == nil || !mount.ReadOnly || mount.SubPath != "" {
					t.Fatalf("token mount %+v: want a read-only directory mount (a subPath mount never sees a rotation)", mount)
				}
				eq(t, "SIGLAKE_BUFFER_TOKEN_FILE", env["SIGLAKE_BUFFER_TOKEN_FILE"], filepath.Join(mount.MountPath, c.file))
			}
			var created *corev1.Secret
			for _, s := range r.secrets {
				if strings.HasSuffix(s.Name, "-buffer") {
					created = s
				}
			}
			if (created != nil) != (c.created != "") {
				t.Fatalf("the chart created the token Secret: %v, want %v", created != nil, c.created != "")
			}
			if created != nil {
				data := created.Data[c.file]
				eq(t, "token file", string(data), c.created)
				path := filepath.Join(t.TempDir(), c.file)
				if err := os.WriteFile(path, data, 0o600); err != nil {
					t.Fatal(err)
				}
				if tok, err := reader.ReadToken(path); err != nil || tok != tok1 {
					t.Fatalf("the binary reads the rendered token file as %q, %v", tok, err)
				}
			}
			tv, tm := bufferVolume(t, r, "siglake-buffer-tls")
			if c.tls != (tv != nil && tm != nil && tm.ReadOnly && tv.Secret != nil && tv.Secret.SecretName == "buffer-tls") {
				t.Errorf("TLS volume %+v mount %+v, want it: %v", tv, tm, c.tls)
			}
			if c.tls {
				eq(t, "SIGLAKE_BUFFER_TLS_CERT_FILE", env["SIGLAKE_BUFFER_TLS_CERT_FILE"], filepath.Join(tm.MountPath, "tls.crt"))
				eq(t, "SIGLAKE_BUFFER_TLS_KEY_FILE", env["SIGLAKE_BUFFER_TLS_KEY_FILE"], filepath.Join(tm.MountPath, "tls.key"))
				// siglake tail in the pod checks the buffer's certificate against the Secret's CA.
				eq(t, "SIGLAKE_BUFFER_TLS_CA_FILE", env["SIGLAKE_BUFFER_TLS_CA_FILE"], filepath.Join(tm.MountPath, "ca.crt"))
			} else if env["SIGLAKE_BUFFER_TLS_CA_FILE"] != "" {
				t.Errorf("SIGLAKE_BUFFER_TLS_CA_FILE=%q without TLS", env["SIGLAKE_BUFFER_TLS_CA_FILE"])
			}
			if c.clientCA {
				eq(t, "SIGLAKE_BUFFER_TLS_CLIENT_CA_FILE", env["SIGLAKE_BUFFER_TLS_CLIENT_CA_FILE"], filepath.Join(tm.MountPath, "ca.crt"))
			}
			// The binary accepts what the chart renders.
			if _, err := loadEnv(t, env); err != nil {
				t.Fatalf("the binary refuses the rendered environment: %v", err)
			}
		})
	}
}

// TestWALBufferAuthRenderFailures: the buffer on beyond loopback with no credentials does not
// render, and says how to provide them; a token that is too short fails without being quoted.
func TestWALBufferAuthRenderFailures(t *testing.T) {
	dir := chartDir(t)
	on := []string{"--set", "compactor.walBuffer.enabled=true"}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"no credentials", nil, []string{"without credentials", "kubectl create secret", "compactor.walBuffer.tokenSecret.name", "tls.secretName",
			"compactor.walBuffer.bind=127.0.0.1", "compactor.walBuffer.insecureNoAuth=true"}},
		{"TLS is not authentication", []string{"--set", "compactor.walBuffer.tls.secretName=buffer-tls"}, []string{"without credentials"}},
		{"client CA without a certificate", []string{"--set", "compactor.walBuffer.tls.clientCA=true", "--set", "compactor.walBuffer.insecureNoAuth=true"},
			[]string{"compactor.walBuffer.tls.clientCA needs compactor.walBuffer.tls.secretName"}},
		{"short token", []string{"--set", "compactor.walBuffer.token=tiny-tok"}, []string{"compactor.walBuffer.token: line 1", "at least 16"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(t, dir, append(on, c.args...)...)
			if err == nil {
				t.Fatalf("helm template %v succeeded, want a failure", c.args)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("failure does not mention %q:\n%v", w, err)
				}
			}
			if _, msg, _ := strings.Cut(err.Error(), "Error:"); strings.Contains(msg, "tiny-tok") {
				t.Errorf("the failure quotes the token: %v", err)
			}
		})
	}
}

// TestWALBufferIPv6Bind: an IPv6 bind renders with brackets, which the binary accepts (a bare
// "::1:9465" is refused at start: a crash loop); ::1 is loopback, so it needs no credentials.
func TestWALBufferIPv6Bind(t *testing.T) {
	dir := chartDir(t)
	for _, c := range []struct {
		bind, want string
		args       []string
	}{
		{"::1", "[::1]:9465", nil},
		{"[::1]", "[::1]:9465", nil},
		{"::", "[::]:9465", []string{"--set", "compactor.walBuffer.tokenSecret.name=readers"}},
	} {
		args := append([]string{"--set", "compactor.walBuffer.enabled=true", "--set-string", "compactor.walBuffer.bind=" + c.bind}, c.args...)
		env := resolveEnv(t, sidecarContainer(t, decodeAll(t, mustRender(t, dir, args...))))
		eq(t, "SIGLAKE_BUFFER_ADDR of bind "+c.bind, env["SIGLAKE_BUFFER_ADDR"], c.want)
		if cfg, err := loadEnv(t, env); err != nil || cfg.BufferAddr != c.want {
			t.Fatalf("bind %s: the binary reads %q: %v", c.bind, cfg.BufferAddr, err)
		}
	}
}
