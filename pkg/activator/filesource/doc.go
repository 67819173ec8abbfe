// Package filesource is a Platform for the activator read from a JSON
// file: the revisions, their settings and their replicas' addresses. It
// stands in for the local and Kubernetes platforms in tests, benchmarks
// and hand-run setups; docs/activator.md documents the format.
//
// It owns the file's parsing (Parse, fuzzed) and its watching: the file is
// re-read every Interval and on each value of Reload (cmd/activator sends
// one on SIGHUP), and the activator is told when its content changed. A
// file that fails to parse on reload is reported and ignored: the last good
// content stays in force. It does not probe or route: the activator does.
package filesource
