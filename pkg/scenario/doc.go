// Package scenario reads scenario files and replays them through the
// decider on a virtual clock (../../shared/spec/scenario-format.md).
//
// It owns the scenario format (JSON; the command line converts YAML to JSON
// before calling Parse), the replay loop (ticks every tick-interval, pokes
// at non-tick seconds) and the JSON-lines output of `autoscaler simulate`.
// It is pure: it reads no files and no clock; the caller passes bytes in and
// receives lines out.
package scenario
