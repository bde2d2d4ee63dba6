package lake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/apache/iceberg-go"
)

// CatalogIDProperty is the namespace property that holds the identity of siglake's catalog and
// namespace. Gossip members compete for a table's maintenance lease only when they advertise the
// same identity (docs/gossip.md "Leases per catalog"): pods with private embedded catalogs each
// own all their tables, pods on one shared catalog share them.
const CatalogIDProperty = "siglake.catalog-id"

// newCatalogID is 96 random bits, hex: unique across every catalog there will ever be, and short
// enough for gossip's 512-byte member metadata.
func newCatalogID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand never fails on the platforms Go supports
	return hex.EncodeToString(b)
}

// CatalogID returns the identity stored in the namespace's properties, writing one when there is
// none. A namespace siglake creates gets its identity in the same atomic create (Open), so only a
// namespace made before identities existed, or whose property was removed, is written here. That
// write is last-writer-wins on every catalog, so two processes racing on it may first see
// different identities; each re-reads the property on every catalog check and adopts what is
// stored, so they agree within one check interval (both act as owners meanwhile, which the
// replace commit's validation makes safe).
func (l *Lake) CatalogID(ctx context.Context) (string, error) {
	props, err := l.cat.LoadNamespaceProperties(ctx, l.ns)
	if err != nil {
		return "", fmt.Errorf("read catalog identity (namespace %s): %w", l.ns[0], err)
	}
	if id := props[CatalogIDProperty]; id != "" {
		return id, nil
	}
	if _, err := l.cat.UpdateNamespaceProperties(ctx, l.ns, nil, iceberg.Properties{CatalogIDProperty: newCatalogID()}); err != nil {
		return "", fmt.Errorf("write catalog identity (namespace %s): %w", l.ns[0], err)
	}
	props, err = l.cat.LoadNamespaceProperties(ctx, l.ns)
	if err != nil {
		return "", fmt.Errorf("read catalog identity (namespace %s): %w", l.ns[0], err)
	}
	if id := props[CatalogIDProperty]; id != "" {
		return id, nil
	}
	return "", fmt.Errorf("catalog identity of namespace %s is not kept by the catalog (property %s)", l.ns[0], CatalogIDProperty)
}

// LeaseKey is the name a table's maintenance lease goes by: namespace and table, so tables of the
// same name in two namespaces never share a lease.
func LeaseKey(namespace, table string) string { return namespace + "." + table }
