package membership

import (
	"bytes"
	"context"
	"errors"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/gossip"
	gossipkeys "github.com/siglake/siglake/gossip/keys"
)

// KeyReload is how often the gossip key file is re-read. A Secret's new contents reach a mounted
// volume within the kubelet's sync period (about a minute), so a few seconds here add little to a
// rotation step and the read is one small file.
const KeyReload = 5 * time.Second

// KeyHolder is what WatchKeys installs keys in: *gossip.Cluster, or groupcommit.Keys.
type KeyHolder interface {
	SetKeys(ks [][]byte) (changed bool, err error)
	Keys() gossipkeys.State
}

var _ KeyHolder = (*gossip.Cluster)(nil)

// WatchKeys re-reads the key file every `every` until ctx is done and installs what it holds, so a
// rotation (add the new key second, make it first, remove the old one: docs/gossip.md) needs no
// restart. A file that cannot be read or parsed keeps the keys in use: dropping them would cut this
// member off. Each distinct failure is logged once, as an error.
//
// c is the gossip cluster, or group commit's keys where gossip is off (groupcommit.Keys).
func WatchKeys(ctx context.Context, c KeyHolder, path string, every time.Duration, log *zap.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	var last []byte
	lastErr := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		data, err := os.ReadFile(path)
		if err == nil && bytes.Equal(data, last) {
			continue
		}
		var keys [][]byte
		if err == nil {
			keys, err = gossipkeys.Parse(data)
		}
		changed := false
		if err == nil {
			changed, err = c.SetKeys(keys)
		}
		if err != nil {
			if msg := err.Error(); msg != lastErr {
				lastErr = msg
				log.Error("gossip key file not applied; the keys in use stay", zap.String("key_file", path), zap.Error(err),
					zap.String("accepted", gossipkeys.Accepted), zap.Bool("no_keyring", errors.Is(err, gossipkeys.ErrNoKeyring)))
			}
			continue
		}
		last, lastErr = data, ""
		if changed {
			ks := c.Keys()
			log.Info("gossip keys reloaded", zap.String("key_file", path), zap.Int("keys", ks.Keys), zap.String("primary_key", ks.Primary))
		}
	}
}
