//go:build race

package gossip

// raceSlowdown stretches the fast test timings under the race detector,
// which slows every member down several times; without it, members are
// falsely suspected and the tests measure the detector, not gossip.
const raceSlowdown = 4
