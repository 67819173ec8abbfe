// Package resusage measures what one replica of the local platform uses:
// the CPU time and the working-set memory of the app's process tree, as
// the kubelet measures a container (cgroup v2 cpu.stat usage_usec, and
// memory.current minus memory.stat inactive_file), when the replica runs
// in a cgroup of its own; else from /proc, summed over the process and
// every descendant (utime+stime+cutime+cstime of /proc/<pid>/stat, VmRSS
// of /proc/<pid>/status, or Rss of smaps_rollup).
//
// The parsers (parse.go) are pure functions of a file's bytes, fuzzed; the
// Reader does the I/O on an fs.FS rooted at "/" (os.DirFS("/") in
// production, recorded trees under testdata in tests). Rate turns two
// cumulative samples into cores.
//
// It must not keep state between calls (the caller keeps the previous
// sample), start goroutines, or log.
package resusage
