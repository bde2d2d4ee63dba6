package sidecar

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/catalogs"
	"github.com/siglake/siglake/test/testenv"
)

// TestOpenLakeWaitsOutACatalogBeingProvisioned: a PostgreSQL operator accepts connections before
// it creates the role and the database. The long-running process waits that out (logged at error,
// naming the option) and opens the catalog once the database appears; it exits on a role that is
// still refused after the grace; --once exits at once.
func TestOpenLakeWaitsOutACatalogBeingProvisioned(t *testing.T) {
	base := testenv.Postgres(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t_late_" + hex.EncodeToString(b[:])
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	late := *u
	late.Path = "/" + name
	noRole := *u
	noRole.User = url.UserPassword("no_such_role_"+hex.EncodeToString(b[:]), "pw")

	open := func(catalog string, once bool, grace time.Duration, logs *zap.Logger) (*lake.Lake, time.Duration, error) {
		e := newEnv(t, func(c *config.Config) { c.Catalog = catalog })
		p := NewProcess(e.cfg, logs, "test")
		p.ProvisionGrace = grace
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		start := time.Now()
		l, err := p.openLake(ctx, once)
		return l, time.Since(start), err
	}

	t.Run("once_fails_at_once", func(t *testing.T) {
		_, took, err := open(late.String(), true, time.Minute, zap.NewNop())
		if !errors.Is(err, catalogs.ErrBadConfig) || took > 5*time.Second {
			t.Fatalf("--once on a missing database: %v after %v, want a configuration error at once", err, took)
		}
	})

	t.Run("database_appears", func(t *testing.T) {
		db, err := sql.Open(testenv.PostgresDriver, base)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		t.Cleanup(func() { _, _ = db.Exec("DROP DATABASE IF EXISTS " + name) })
		go func() {
			time.Sleep(1500 * time.Millisecond)
			if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
				t.Errorf("create database: %v", err)
			}
		}()
		core, logs := observer.New(zapcore.ErrorLevel)
		l, took, err := open(late.String(), false, time.Minute, zap.New(core))
		if err != nil {
			t.Fatalf("database created after 1.5 s: %v after %v, want the catalog opened", err, took)
		}
		l.Close()
		if logs.Len() == 0 || !strings.Contains(logs.All()[0].Message, "SIGLAKE_CATALOG") {
			t.Errorf("the wait was not logged at error naming the option: %v", logs.All())
		}
	})

	t.Run("role_never_appears", func(t *testing.T) {
		const grace = 2 * time.Second
		_, took, err := open(noRole.String(), false, grace, zap.NewNop())
		if !errors.Is(err, catalogs.ErrBadConfig) || !strings.Contains(err.Error(), "refused the credentials") {
			t.Fatalf("role never created: %v, want the configuration error", err)
		}
		if took < grace || took > grace+5*time.Second {
			t.Errorf("exited after %v, want after the %v grace", took, grace)
		}
	})
}
