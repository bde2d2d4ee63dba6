package chart

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/siglake/siglake/sidecar/config"
)

// The gossip key and cluster label (docs/gossip.md): with gossip on, the chart mounts a key file
// from a Secret it creates or one that exists, and refuses to render without a key unless told
// that the cluster is for tests.

func gossipKeyVolume(t *testing.T, r rendered) (*corev1.Volume, *corev1.VolumeMount) {
	t.Helper()
	spec := r.statefulSets[0].Spec.Template.Spec
	var vol *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == "siglake-gossip-key" {
			vol = &spec.Volumes[i]
		}
	}
	var mount *corev1.VolumeMount
	c := container(spec, "siglake-compactor")
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == "siglake-gossip-key" {
			mount = &c.VolumeMounts[i]
		}
	}
	return vol, mount
}

func TestGossipKeyRenders(t *testing.T) {
	dir := chartDir(t)
	k1 := testGossipKey
	k2 := base64.StdEncoding.EncodeToString([]byte("fedcba9876543210"))
	cases := []struct {
		name string
		args []string
		// secret is the Secret mounted ("" none); created, whether the chart renders it, with file.
		secret, file, created string
		label, migration      string
	}{
		{"key from values", nil, releaseName + "-siglake-compactor-gossip", "keys", k1 + "\n", "", ""},
		{"key migration step", []string{"--set", "gossip.keyMigration=accept"}, releaseName + "-siglake-compactor-gossip", "keys", k1 + "\n", "", "accept"},
		{"several keys from values, first sends", []string{"--set-string", "gossip.key=" + k2 + "\n" + k1, "--set", "gossip.clusterLabel=blue"},
			releaseName + "-siglake-compactor-gossip", "keys", k2 + "\n" + k1 + "\n", "blue", ""},
		{"existing Secret, which wins over gossip.key", []string{"--set", "gossip.keySecret.name=mine", "--set", "gossip.keySecret.key=gossip.keys"},
			"mine", "gossip.keys", "", "", ""},
		{"insecure opt-out", []string{"--set", "gossip.key=", "--set", "gossip.insecureNoKey=true"}, "", "", "", "", ""},
		{"gossip off", []string{"--set", "gossip.key=", "--set", "gossip.enabled=false"}, "", "", "", "", ""},
		{"gossip off, key from values unused", []string{"--set", "gossip.enabled=false"}, "", "", "", "", ""},
		// Without gossip, catalog claims elect group commit's committers and the key signs the
		// hand-offs over HTTP (docs/group-commit.md).
		{"gossip off, catalog claims: key from values", []string{"--set", "gossip.enabled=false", "--set", "compactor.catalogClaim=true"},
			releaseName + "-siglake-compactor-gossip", "keys", k1 + "\n", "", ""},
		{"gossip off, catalog claims: existing Secret", []string{"--set", "gossip.enabled=false", "--set", "compactor.catalogClaim=true", "--set", "gossip.keySecret.name=mine"},
			"mine", "keys", "", "", ""},
		{"gossip off, catalog claims, no key: no failure (group commit stays off)", []string{"--set", "gossip.key=", "--set", "gossip.enabled=false", "--set", "compactor.catalogClaim=true"}, "", "", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := decodeAll(t, mustRender(t, dir, c.args...))
			env := resolveEnv(t, sidecarContainer(t, r))
			vol, mount := gossipKeyVolume(t, r)
			if c.secret == "" {
				if vol != nil || mount != nil || env["SIGLAKE_GOSSIP_KEY_FILE"] != "" || len(r.secrets) != 0 {
					t.Fatalf("no key wanted, got volume %v, mount %v, file %q, %d Secrets", vol, mount, env["SIGLAKE_GOSSIP_KEY_FILE"], len(r.secrets))
				}
			} else {
				if vol == nil || vol.Secret == nil || vol.Secret.SecretName != c.secret {
					t.Fatalf("key volume %+v, want Secret %s", vol, c.secret)
				}
				// Secret files are root's; the image runs as uid 65532, and a pod built with the
				// volumes helper may have no fsGroup: the file must be readable by others.
				if m := vol.Secret.DefaultMode; m == nil || *m&0o004 == 0 {
					t.Fatalf("key volume mode %s: the sidecar (uid 65532, maybe without fsGroup) cannot read it", modeString(m))
				}
				if mount == nil || !mount.ReadOnly || mount.SubPath != "" {
					t.Fatalf("key mount %+v: want a read-only directory mount (a subPath mount never sees a rotation)", mount)
				}
				eq(t, "SIGLAKE_GOSSIP_KEY_FILE", env["SIGLAKE_GOSSIP_KEY_FILE"], filepath.Join(mount.MountPath, c.file))
			}
			// No label unless asked for: a label on a running release would split it on upgrade.
			eq(t, "SIGLAKE_GOSSIP_CLUSTER_LABEL", env["SIGLAKE_GOSSIP_CLUSTER_LABEL"], c.label)
			eq(t, "SIGLAKE_GOSSIP_KEY_MIGRATION", env["SIGLAKE_GOSSIP_KEY_MIGRATION"], c.migration)
			if c.created == "" {
				if len(r.secrets) != 0 {
					t.Fatalf("the chart created %d Secrets, want none", len(r.secrets))
				}
				return
			}
			if len(r.secrets) != 1 || r.secrets[0].Name != c.secret {
				t.Fatalf("want the Secret %s, got %d Secrets", c.secret, len(r.secrets))
			}
			data := r.secrets[0].Data[c.file]
			eq(t, "key file", string(data), c.created)
			// The binary reads what the chart wrote.
			path := filepath.Join(t.TempDir(), c.file)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			keys, err := config.GossipKeys(config.Config{GossipKeyFile: path})
			if err != nil || len(keys) != strings.Count(c.created, "\n") {
				t.Fatalf("the binary reads the rendered key file as %d keys, %v", len(keys), err)
			}
		})
	}
}

// testGossipKey is the key of testdata/gossip-key-values.yaml, which every render of the chart
// in these tests starts from.
const testGossipKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

// badKeyLine is a key of 24 bytes with one character lost.
var badKeyLine = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef01234567"))[1:]

func TestGossipKeyRenderFailures(t *testing.T) {
	dir := chartDir(t)
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"gossip on without a key", []string{"--set", "gossip.key="}, []string{"without an encryption key", "kubectl create secret", "gossip.keySecret.name", "--reuse-values", "gossip.keyMigration", "gossip.insecureNoKey=true"}},
		{"key migration without a key", []string{"--set", "gossip.key=", "--set", "gossip.insecureNoKey=true", "--set", "gossip.keyMigration=accept"}, []string{"gossip.keyMigration needs a key"}},
		{"unknown key migration step", []string{"--set", "gossip.keyMigration=both"}, []string{"keyMigration", "accept", "send"}},
		{"not base64", []string{"--set", "gossip.key=not-a-key"}, []string{"gossip.key", "line 1", "not a base64 key of 16, 24 or 32 bytes"}},
		{"wrong size", []string{"--set", "gossip.key=" + base64.StdEncoding.EncodeToString(make([]byte, 20))}, []string{"gossip.key", "16, 24 or 32 bytes", "20 bytes"}},
		{"second line bad", []string{"--set-string", "gossip.key=" + testGossipKey + "\n" + badKeyLine}, []string{"gossip.key: line 2", "16, 24 or 32 bytes", "not base64"}},
		{"label too long", []string{"--set", "gossip.clusterLabel=" + strings.Repeat("x", 256)}, []string{"clusterLabel"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(t, dir, c.args...)
			if err == nil {
				t.Fatalf("helm template %v succeeded, want a failure", c.args)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("failure does not mention %q:\n%v", w, err)
				}
			}
			// A bad line may still be a key (one mistyped character): helm's output goes to CI
			// logs, so it must not print it.
			for _, secret := range []string{"not-a-key", badKeyLine, base64.StdEncoding.EncodeToString(make([]byte, 20))} {
				_, msg, _ := strings.Cut(err.Error(), "Error:") // after helm's command line
				if strings.Contains(msg, secret) {
					t.Errorf("failure prints the key line %q:\n%v", secret, err)
				}
			}
		})
	}
}

func modeString(m *int32) string {
	if m == nil {
		return "unset"
	}
	return fmt.Sprintf("%#o", *m)
}
