package lake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// catalogIDProperty is the property that holds the identity of siglake's catalog and namespace.
// Gossip members compete for a table's maintenance lease only when they advertise the same
// identity (docs/gossip.md "Leases per catalog"): pods with private embedded catalogs each own
// all their tables, pods on one shared catalog share them.
const catalogIDProperty = tableprops.CatalogID

// IdentityNamespace is the namespace whose properties hold the identity of the catalog and
// siglake's namespace ns: `<ns>_identity`, beside the claims' `<ns>_claims`. It holds no table.
func IdentityNamespace(ns string) string { return ns + "_identity" }

// newCatalogID is 96 random bits, hex: unique across every catalog there will ever be, and short
// enough for gossip's 512-byte member metadata.
func newCatalogID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand never fails on the platforms Go supports
	return hex.EncodeToString(b)
}

// CatalogID returns the identity of the catalog and namespace, creating it on first use. The
// identity is written exactly once, by compare-and-swap: it is the property of the identity
// namespace, and a namespace is created with its properties in one atomic create that fails for
// every caller but one (the SQL catalog's unique key, the REST catalog's 409), so processes that
// start together all read the one identity that won. It lives in the catalog, so it survives
// restarts and is the same for every process on a shared catalog and different for every private
// one.
func (l *Lake) CatalogID(ctx context.Context) (string, error) {
	ns := table.Identifier{IdentityNamespace(l.ns[0])}
	props, err := l.cat.LoadNamespaceProperties(ctx, ns)
	switch {
	case err == nil && props[catalogIDProperty] != "":
		return props[catalogIDProperty], nil
	case err == nil:
		return "", fmt.Errorf("namespace %s exists without property %s: it is siglake's catalog identity; drop the namespace and siglake creates it again", ns[0], catalogIDProperty)
	case !errors.Is(err, catalog.ErrNoSuchNamespace):
		return "", fmt.Errorf("read catalog identity (namespace %s): %w", ns[0], err)
	}
	if err := l.cat.CreateNamespace(ctx, ns, iceberg.Properties{catalogIDProperty: newCatalogID()}); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return "", fmt.Errorf("create catalog identity (namespace %s): %w", ns[0], err)
	}
	props, err = l.cat.LoadNamespaceProperties(ctx, ns) // ours, or the one that won the create
	if err != nil {
		return "", fmt.Errorf("read catalog identity (namespace %s): %w", ns[0], err)
	}
	if id := props[catalogIDProperty]; id != "" {
		return id, nil
	}
	return "", fmt.Errorf("catalog identity of %s is not kept by the catalog (property %s of namespace %s)", l.ns[0], catalogIDProperty, ns[0])
}

// LeaseKey is the name a table's maintenance lease goes by: namespace and table, so tables of the
// same name in two namespaces never share a lease.
func LeaseKey(namespace, table string) string { return namespace + "." + table }
