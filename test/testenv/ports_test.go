package testenv

import (
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// portBusy runs scripts/lib.sh's port_busy on port.
func portBusy(t *testing.T, port int) bool {
	t.Helper()
	cmd := exec.Command("bash", "-c", `. "$1" && port_busy "$2"`, "bash", filepath.Join(RepoRoot(), "scripts", "lib.sh"), strconv.Itoa(port))
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("port_busy: %v\n%s", err, out)
	}
	return err == nil
}

// TestPortBusyBinds: a port held by a client socket as its local end accepts no connection, yet a
// server cannot bind it (the test PostgreSQL failed to start on such a port). The scripts' check
// binds, so it sees that port busy; a free port is free.
func TestPortBusyBinds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	// A client whose local port is chosen by the kernel, as any outgoing connection's is.
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	held := c.LocalAddr().(*net.TCPAddr).Port
	if !portBusy(t, held) {
		t.Errorf("port %d, the local end of a connected client socket, reported free", held)
	}
	if listening := ln.Addr().(*net.TCPAddr).Port; !portBusy(t, listening) {
		t.Errorf("port %d, a listener's, reported free", listening)
	}
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	free.Close()
	if portBusy(t, port) {
		t.Errorf("port %d, free, reported busy", port)
	}
}

// TestPortBusySeesIPv6Loopback: a PostgreSQL with listen_addresses=localhost binds ::1 as well
// as 127.0.0.1; a port held only on ::1 is busy too.
func TestPortBusySeesIPv6Loopback(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	defer ln.Close()
	if port := ln.Addr().(*net.TCPAddr).Port; !portBusy(t, port) {
		t.Errorf("port %d, a listener's on ::1, reported free", port)
	}
}
