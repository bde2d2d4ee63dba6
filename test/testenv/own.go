package testenv

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// OwnServer is a PostgreSQL or S3 server private to one test, for outage tests: stopping
// the shared servers would break every other package's tests running at the same time.
// It is deleted when the test ends.
type OwnServer struct {
	script string // postgres.sh or versitygw.sh
	state  string // its SIGLAKE_TEST_STATE
	env    map[string]string
}

// OwnPostgres starts a private PostgreSQL cluster (a few seconds: initdb) and returns
// it with the DSN of its `siglake` database.
func OwnPostgres(t testing.TB) (*OwnServer, string) {
	t.Helper()
	s := startOwn(t, "postgres.sh", "SIGLAKE_TEST_PG_PORT", "postgres.env")
	return s, s.env["SIGLAKE_TEST_POSTGRES_DSN"]
}

// OwnS3 starts a private versitygw with its own bucket, credentials and POSIX root.
func OwnS3(t testing.TB) (*OwnServer, S3Env) {
	t.Helper()
	s := startOwn(t, "versitygw.sh", "SIGLAKE_TEST_S3_PORT", "versitygw.env")
	return s, S3Env{
		Endpoint:  s.env["SIGLAKE_TEST_S3_ENDPOINT"],
		AccessKey: s.env["SIGLAKE_TEST_S3_ACCESS_KEY"],
		SecretKey: s.env["SIGLAKE_TEST_S3_SECRET_KEY"],
		Bucket:    s.env["SIGLAKE_TEST_S3_BUCKET"],
		Region:    s.env["SIGLAKE_TEST_S3_REGION"],
		Root:      s.env["SIGLAKE_TEST_S3_ROOT"],
	}
}

func startOwn(t testing.TB, script, portVar, envFile string) *OwnServer {
	t.Helper()
	if RepoRoot() == "" {
		t.Fatalf("repository root not found from the working directory")
	}
	state, err := os.MkdirTemp("", "siglake-own-")
	if err != nil {
		t.Fatal(err)
	}
	s := &OwnServer{script: script, state: state}
	t.Cleanup(func() {
		if out, err := s.run("clean", ""); err != nil {
			t.Logf("scripts/%s clean: %v\n%s", script, err, out)
		}
		os.RemoveAll(state)
	})
	// A random preferred port away from the shared servers' defaults (25432, 27070) keeps
	// parallel test binaries from racing for the same one; below 25000, so neither it nor the
	// ports scripts/lib.sh tries after it reach the ephemeral range (32768 up).
	port := strconv.Itoa(10000 + rand.IntN(15000))
	if out, err := s.run("start", portVar+"="+port); err != nil {
		// The shared server's availability decides skip or fail: without it the
		// machine cannot run the service at all.
		unavailable(t, "scripts/%s start (private instance): %v\n%s", script, err, out)
	}
	s.env = readEnvFile(filepath.Join(state, envFile))
	if len(s.env) == 0 {
		t.Fatalf("scripts/%s start wrote no %s", script, envFile)
	}
	return s
}

// Stop stops the server, keeping its data and port.
func (s *OwnServer) Stop(t testing.TB) {
	t.Helper()
	if out, err := s.run("stop", ""); err != nil {
		t.Fatalf("scripts/%s stop: %v\n%s", s.script, err, out)
	}
}

// Start starts it again on the same port with the same data and credentials.
func (s *OwnServer) Start(t testing.TB) {
	t.Helper()
	if out, err := s.run("start", ""); err != nil {
		t.Fatalf("scripts/%s start: %v\n%s", s.script, err, out)
	}
}

func (s *OwnServer) run(action, extraEnv string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(RepoRoot(), "scripts", s.script), action)
	cmd.Env = append(os.Environ(), "SIGLAKE_TEST_STATE="+s.state)
	if extraEnv != "" {
		cmd.Env = append(cmd.Env, extraEnv)
	}
	return cmd.CombinedOutput()
}
