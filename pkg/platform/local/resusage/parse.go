package resusage

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// errNoField means a file did not have the line or field asked for.
var errNoField = errors.New("field not found")

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times. Linux has
// fixed it at 100 on every architecture Go supports; reading
// sysconf(_SC_CLK_TCK) would need cgo.
const clockTicks = 100

// procStat is what the reader needs from /proc/<pid>/stat.
type procStat struct {
	PID, PPID int
	// Ticks is utime+stime+cutime+cstime in clock ticks: the process's
	// own CPU time and that of its children it has waited for, so that a
	// child's time is counted once whether it still runs or has exited.
	Ticks uint64
}

// parseProcStat parses /proc/<pid>/stat. The command name (field 2) is in
// parentheses and may hold spaces and parentheses itself, so the fields
// after it are counted from the last ')'.
func parseProcStat(b []byte) (procStat, error) {
	open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 1 || close < open {
		return procStat{}, fmt.Errorf("parsing /proc/<pid>/stat: no (comm): %w", errNoField)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil || pid <= 0 {
		return procStat{}, fmt.Errorf("parsing /proc/<pid>/stat: pid %q is not a pid", bytes.TrimSpace(b[:open]))
	}
	// rest[0] is field 3 (state): ppid is field 4, utime..cstime 14..17.
	rest := bytes.Fields(b[close+1:])
	if len(rest) < 15 {
		return procStat{}, fmt.Errorf("parsing /proc/<pid>/stat: %d fields after comm, want at least 15: %w", len(rest), errNoField)
	}
	s := procStat{PID: pid}
	if s.PPID, err = strconv.Atoi(string(rest[1])); err != nil || s.PPID < 0 {
		return procStat{}, fmt.Errorf("parsing /proc/<pid>/stat: ppid %q is not a pid", rest[1])
	}
	for _, f := range rest[11:15] {
		// cutime and cstime are signed in the kernel's format (long) but
		// never negative in practice; a negative one is refused.
		v, err := strconv.ParseUint(string(f), 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("parsing /proc/<pid>/stat times: %w", err)
		}
		s.Ticks += v
	}
	return s, nil
}

// parseStatusRSS returns VmRSS of /proc/<pid>/status in bytes. A kernel
// thread or a zombie has no VmRSS line: ErrNoField.
func parseStatusRSS(b []byte) (int64, error) {
	return kibLine(b, "VmRSS:")
}

// parseSmapsRollupRSS returns Rss of /proc/<pid>/smaps_rollup in bytes.
func parseSmapsRollupRSS(b []byte) (int64, error) {
	return kibLine(b, "Rss:")
}

// kibLine finds the line starting with key and parses "N kB" after it.
func kibLine(b []byte, key string) (int64, error) {
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		rest, ok := bytes.CutPrefix(line, []byte(key))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("parsing %s %q: want \"N kB\"", key, rest)
		}
		v, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || v < 0 || v > (1<<53)/1024 {
			return 0, fmt.Errorf("parsing %s %q: not a size in kB", key, f[0])
		}
		return v * 1024, nil
	}
	return 0, fmt.Errorf("parsing %s: %w", key, errNoField)
}

// parseChildren parses /proc/<pid>/task/<tid>/children: pids separated by
// spaces.
func parseChildren(b []byte) ([]int, error) {
	var pids []int
	for _, f := range bytes.Fields(b) {
		pid, err := strconv.Atoi(string(f))
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("parsing children %q: not a pid", f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// parseKeyValue returns the value of key in a flat-keyed cgroup file
// (cpu.stat, memory.stat: "key value" lines).
func parseKeyValue(b []byte, key string) (uint64, error) {
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		f := bytes.Fields(line)
		if len(f) == 2 && string(f[0]) == key {
			v, err := strconv.ParseUint(string(f[1]), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing %s: %w", key, err)
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("parsing %s: %w", key, errNoField)
}

// parseUint parses a single-value cgroup file (memory.current).
func parseUint(b []byte) (uint64, error) {
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing a cgroup value: %w", err)
	}
	return v, nil
}

// parseCgroupV2Path returns the cgroup v2 path of /proc/<pid>/cgroup: the
// line "0::/path". A process only in v1 hierarchies has none: ErrNoField.
func parseCgroupV2Path(b []byte) (string, error) {
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		if rest, ok := bytes.CutPrefix(line, []byte("0::")); ok && len(rest) > 0 && rest[0] == '/' {
			return string(rest), nil
		}
	}
	return "", fmt.Errorf("parsing /proc/<pid>/cgroup: no cgroup v2 line: %w", errNoField)
}

// parseCgroup2Mount returns where /proc/mounts mounts the cgroup2
// filesystem (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host).
func parseCgroup2Mount(b []byte) (string, error) {
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		f := bytes.Fields(line)
		if len(f) >= 3 && string(f[2]) == "cgroup2" {
			return string(f[1]), nil
		}
	}
	return "", fmt.Errorf("parsing /proc/mounts: no cgroup2 mount: %w", errNoField)
}
