// Package scenario reads scenario files and replays them through the
// decider on a virtual clock (the format: docs/scenarios.md).
//
// It owns the scenario format (JSON; the command line converts YAML to JSON
// before calling Parse), including Ebb's per-pod samples (samples[].pods,
// for the HPA class), the replay loop (ticks every tick-interval, pokes at
// non-tick seconds, either class through decider.Stepper) and the
// JSON-lines output of `autoscaler simulate`.
// It is pure: it reads no files and no clock; the caller passes bytes in and
// receives lines out.
package scenario
