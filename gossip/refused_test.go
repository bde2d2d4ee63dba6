package gossip

import (
	"errors"
	"net"
	"testing"
	"time"
)

func ownedCount(c *Cluster, tables []string) int {
	n := 0
	for _, tb := range tables {
		if c.Owns(tb) {
			n++
		}
	}
	return n
}

// TestHungPeerIsNotRefusal: once its only peer is gone and a listener that
// accepts connections and never answers sits on the peer's address (a hung
// peer, a proxy, a reused address), a member is alone, not refused: it keeps
// owning every table.
func TestHungPeerIsNotRefusal(t *testing.T) {
	tables := tableNames(20)
	mk := securedConfig([][]byte{testKey(9, 16)}, "prod")
	b, err := Start(mk("b"), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Start(mk("a", b.Addr()), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown()
	a.Track(tables...)
	deadline := time.Now().Add(raceSlowdown * 10 * time.Second)
	for len(a.Members()) < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(a.Members()) < 2 {
		t.Fatal("a never saw b")
	}
	addr := b.Addr()
	_ = b.Shutdown()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, h := range held {
					h.Close()
				}
				return
			}
			held = append(held, c) // never answer
		}
	}()
	// b is declared dead within a few probe rounds; several rejoins against
	// the listener follow.
	time.Sleep(raceSlowdown * 8 * time.Second)
	if n := ownedCount(a, tables); n != len(tables) || a.Status().Refused {
		t.Fatalf("alone member with a hung peer owns %d of %d tables (refused=%v)", n, len(tables), a.Status().Refused)
	}
}

// TestRejoinWithoutTargetsClearsRefused: a rejoin that tries nobody (the
// join name no longer resolves) has no refusal to show, so it clears one.
func TestRejoinWithoutTargetsClearsRefused(t *testing.T) {
	cfg := fastConfig("a", "peers.invalid")
	cfg.RejoinInterval = time.Hour
	c, err := Start(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	c.mu.Lock()
	c.v.refused = true
	c.mu.Unlock()
	c.rejoin()
	if c.Status().Refused {
		t.Fatal("refused kept after a rejoin that tried no peer")
	}
}

// TestJoinRefused: which Join errors are a peer's refusal.
func TestJoinRefused(t *testing.T) {
	for msg, want := range map[string]bool{
		"1 error occurred:\n\t* failed to join 10.0.0.1:7946: no installed keys could decrypt the message\n\n":                true,
		"1 error occurred:\n\t* failed to join 10.0.0.1:7946: remote state is encrypted and encryption is not configured\n\n": true,
		"1 error occurred:\n\t* failed to join 10.0.0.1:7946: encryption is configured but remote state is not encrypted\n\n": true,
		"1 error occurred:\n\t* failed to join 10.0.0.1:7946: EOF\n\n":                                                        true,
		"1 error occurred:\n\t* failed to join 10.0.0.1:7946: read tcp 10.0.0.2:1->10.0.0.1:7946: i/o timeout\n\n":            false,
		"1 error occurred:\n\t* failed to join 10.0.0.1:7946: dial tcp 10.0.0.1:7946: connect: connection refused\n\n":        false,
	} {
		if got := joinRefused(errors.New(msg)); got != want {
			t.Errorf("joinRefused(%q) = %v, want %v", msg, got, want)
		}
	}
	if joinRefused(nil) {
		t.Error("joinRefused(nil)")
	}
}
