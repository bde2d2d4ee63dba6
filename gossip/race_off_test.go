//go:build !race

package gossip

const raceSlowdown = 1
