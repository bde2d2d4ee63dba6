package chart

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/siglake/siglake/sidecar"
)

// freePort asks the kernel for a free loopback port.
// freePort is a port free for TCP and UDP on 127.0.0.1, below the kernel's ephemeral range
// (32768 and up): a port the kernel handed out would be handed out again to the outgoing
// connections of the tests running beside this one, and the sidecar's bind would fail.
func freePort(t *testing.T) int {
	t.Helper()
	for i := 0; i < 200; i++ {
		port := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err != nil {
			continue
		}
		u.Close()
		return port
	}
	t.Fatal("no free port in 20000-32000")
	return 0
}

// TestRenderedSidecarRuns starts the real binary with exactly the environment the chart renders
// for a pod (paths and ports moved to a temp dir and free ports through chart values, the pod IP
// being the loopback), writes WAL segments the way an ingest container would, and checks what
// the pod spec relies on: the probe paths answer on the named port, the rows are drained,
// /metrics serves, `siglake status` works with the container's environment (kubectl exec), and
// SIGTERM ends the process within the pod's termination grace period.
func TestRenderedSidecarRuns(t *testing.T) {
	bin := makeBuild(t)
	tmp := t.TempDir()
	walDir, dataDir := filepath.Join(tmp, "wal"), filepath.Join(tmp, "data")
	for _, d := range []string{walDir, dataDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	httpPort, gossipPort := freePort(t), freePort(t)
	r := decodeAll(t, mustRender(t, chartDir(t),
		"--set", "wal.mountPath="+walDir,
		"--set", "data.mountPath="+dataDir,
		"--set", "catalog.uri=sqlite:"+filepath.Join(dataDir, "catalog.db"),
		"--set", "warehouse.uri="+filepath.Join(dataDir, "warehouse"),
		"--set", "http.port="+strconv.Itoa(httpPort),
		"--set", "gossip.port="+strconv.Itoa(gossipPort),
		"--set", "commitBatch.maxAgeSecs=1",
	))
	c := sidecarContainer(t, r)
	env := resolveEnv(t, c)
	// The kubelet's part: the gossip key Secret the chart renders, mounted where the env points.
	if len(r.secrets) != 1 || env["SIGLAKE_GOSSIP_KEY_FILE"] == "" {
		t.Fatalf("want the gossip key Secret and SIGLAKE_GOSSIP_KEY_FILE, got %d Secrets and %q", len(r.secrets), env["SIGLAKE_GOSSIP_KEY_FILE"])
	}
	keyFile := filepath.Join(tmp, "gossip", filepath.Base(env["SIGLAKE_GOSSIP_KEY_FILE"]))
	if err := os.MkdirAll(filepath.Dir(keyFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, r.secrets[0].Data[filepath.Base(keyFile)], 0o400); err != nil {
		t.Fatal(err)
	}
	env["SIGLAKE_GOSSIP_KEY_FILE"] = keyFile
	// The pod's addresses are the loopback here: servers in tests listen on 127.0.0.1 only.
	var environ []string
	for k, v := range env {
		v = strings.ReplaceAll(v, "0.0.0.0:", "127.0.0.1:")
		v = strings.ReplaceAll(v, fakePodIP+":", "127.0.0.1:")
		env[k] = v
		environ = append(environ, k+"="+v)
	}
	sort.Strings(environ)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var logs bytes.Buffer
	proc := exec.CommandContext(ctx, bin, c.Args...)
	proc.Env = environ // exactly the container's environment, nothing from this process
	proc.Stdout, proc.Stderr = &logs, &logs
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- proc.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			proc.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("sidecar output:\n%s", logs.String())
		}
	}()

	base := "http://127.0.0.1:" + strconv.Itoa(containerPort(t, c, "siglake-http"))
	// The default renders a liveness probe and no readiness probe (docs/operations.md "Probes and
	// readiness"); /readyz still answers for those who turn the probe on.
	if c.ReadinessProbe != nil {
		t.Fatal("the default values render a readiness probe: a catalog outage would make every ingest pod NotReady")
	}
	p := c.LivenessProbe
	if p == nil || p.HTTPGet == nil {
		t.Fatal("the default values render no HTTP liveness probe")
	}
	if p.HTTPGet.Port.StrVal != "siglake-http" {
		t.Fatalf("probe port %v, want the named port siglake-http", p.HTTPGet.Port)
	}
	for _, path := range []string{p.HTTPGet.Path, "/readyz"} {
		waitFor(t, exited, 30*time.Second, "GET "+path, func() (bool, string) {
			code, body := get(base + path)
			return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
		})
	}

	// The ingest container's part: segments in the shared WAL directory.
	gen := exec.Command(bin, "walgen", "--rows", "20000", "--tables", "events,audit", "--segment-mb", "0.25", "--roll-age", "200ms")
	gen.Env = []string{"SIGLAKE_WAL_DIR=" + env["SIGLAKE_WAL_DIR"]}
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("walgen: %v\n%s", err, out)
	}
	waitFor(t, exited, 60*time.Second, "both tables drained", func() (bool, string) {
		_, body := get(base + "/debug/status")
		var st sidecar.StatusReport
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			return false, err.Error()
		}
		var rows int64
		for _, tbl := range st.Tables {
			if tbl.LastCommit != nil {
				rows += tbl.LastCommit.Rows
			}
		}
		return len(st.Tables) == 2 && st.Backlog.Segments == 0 && rows > 0, body
	})
	if code, body := get(base + "/metrics"); code != http.StatusOK || !strings.Contains(body, "siglake_drain_rows_total") {
		t.Errorf("/metrics: %d, siglake_drain_rows_total missing", code)
	} else if !strings.Contains(body, `version="`+buildVersion+`"} 1`) || !strings.Contains(body, "siglake_build_info{") {
		t.Errorf("/metrics: no siglake_build_info with the version make build stamped (%s)", buildVersion)
	}

	// kubectl exec <pod> -c siglake-compactor -- /siglake status: same binary, same environment.
	status := exec.Command(bin, "status")
	status.Env = environ
	out, err := status.CombinedOutput()
	if err != nil {
		t.Fatalf("siglake status: %v\n%s", err, out)
	}
	for _, want := range []string{"node " + fakePodName, "catalog  ready", "events", "audit", "127.0.0.1:" + strconv.Itoa(gossipPort)} {
		if !strings.Contains(string(out), want) {
			t.Errorf("siglake status does not show %q:\n%s", want, out)
		}
	}

	grace := time.Duration(*r.statefulSets[0].Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	start := time.Now()
	if err := proc.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("after SIGTERM the sidecar exited with %v", err)
		}
		t.Logf("stopped %v after SIGTERM (grace period %v)", time.Since(start).Round(time.Millisecond), grace)
	case <-time.After(grace):
		t.Errorf("the sidecar did not stop within the pod's termination grace period %v", grace)
	}
}

func containerPort(t *testing.T, c *corev1.Container, name string) int {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return int(p.ContainerPort)
		}
	}
	t.Fatalf("container has no port %q", name)
	return 0
}

func get(url string) (int, string) {
	cl := &http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls cond until it holds, the process exits, or the timeout passes.
func waitFor(t *testing.T, exited chan error, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("%s: the sidecar exited: %v", what, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatalf("%s: not within %v; last: %s", what, timeout, last)
}
