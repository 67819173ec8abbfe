package resusage

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"time"
)

// Source says where a Usage was read.
type Source string

// Sources of a Usage.
const (
	sourceCgroup Source = "cgroup" // the replica's own cgroup v2
	SourceProc   Source = "proc"   // the process tree in /proc
)

// Usage is one replica's cumulative CPU time and current working set.
type Usage struct {
	CPU        time.Duration // since the processes started; only differences mean something
	WorkingSet int64         // bytes
	Source     Source
}

// Reader reads Usages from a file system rooted at "/". Safe for
// concurrent use: it holds only what NewReader read.
type Reader struct {
	fsys       fs.FS
	cgroupRoot string // the cgroup2 mount without its leading "/"; "" if none
	self       string // the reader's own cgroup v2 path; "" if unknown
}

// NewReader looks up the cgroup2 mount and the caller's own cgroup once.
// Without them (cgroup v1 only, no /proc/mounts) every Usage comes from
// /proc.
func NewReader(fsys fs.FS) *Reader {
	r := &Reader{fsys: fsys}
	if b, err := fs.ReadFile(fsys, "proc/mounts"); err == nil {
		if m, err := parseCgroup2Mount(b); err == nil {
			r.cgroupRoot = trimRoot(m)
		}
	}
	if b, err := fs.ReadFile(fsys, "proc/self/cgroup"); err == nil {
		r.self, _ = parseCgroupV2Path(b)
	}
	return r
}

func trimRoot(p string) string {
	p = path.Clean(p)
	if p == "/" {
		return "."
	}
	return p[1:]
}

// Read returns the usage of the process pid and its descendants: from its
// cgroup when it runs in a cgroup v2 of its own (not the reader's, not the
// root), else from /proc.
func (r *Reader) Read(pid int) (Usage, error) {
	if dir, ok := r.ownCgroup(pid); ok {
		if u, err := r.readCgroup(dir); err == nil {
			return u, nil
		}
	}
	return r.readTree(pid)
}

// ownCgroup is the directory of pid's cgroup when it is one of its own.
func (r *Reader) ownCgroup(pid int) (string, bool) {
	if r.cgroupRoot == "" || r.self == "" {
		return "", false
	}
	b, err := fs.ReadFile(r.fsys, procPath(pid, "cgroup"))
	if err != nil {
		return "", false
	}
	p, err := parseCgroupV2Path(b)
	if err != nil || p == "/" || p == r.self {
		return "", false
	}
	return path.Join(r.cgroupRoot, p), true
}

// readCgroup reads cpu.stat usage_usec and the working set as the kubelet
// computes it: memory.current minus memory.stat inactive_file, at least 0.
func (r *Reader) readCgroup(dir string) (Usage, error) {
	u := Usage{Source: sourceCgroup}
	b, err := fs.ReadFile(r.fsys, path.Join(dir, "cpu.stat"))
	if err != nil {
		return u, fmt.Errorf("reading the cgroup's cpu.stat: %w", err)
	}
	usec, err := parseKeyValue(b, "usage_usec")
	if err != nil {
		return u, err
	}
	if b, err = fs.ReadFile(r.fsys, path.Join(dir, "memory.current")); err != nil {
		return u, fmt.Errorf("reading the cgroup's memory.current: %w", err)
	}
	current, err := parseUint(b)
	if err != nil {
		return u, err
	}
	if b, err = fs.ReadFile(r.fsys, path.Join(dir, "memory.stat")); err != nil {
		return u, fmt.Errorf("reading the cgroup's memory.stat: %w", err)
	}
	inactive, err := parseKeyValue(b, "inactive_file")
	if err != nil {
		return u, err
	}
	u.CPU = time.Duration(min(usec, uint64(1<<62)/1000)) * time.Microsecond
	if current > inactive {
		u.WorkingSet = int64(min(current-inactive, 1<<62))
	}
	return u, nil
}

// readTree sums the process pid and its descendants. A descendant that
// exits during the walk is skipped; pid itself must be there.
func (r *Reader) readTree(pid int) (Usage, error) {
	pids, err := r.tree(pid)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Source: SourceProc}
	var ticks uint64
	for i, p := range pids {
		st, rss, err := r.readProcess(p)
		if err != nil {
			if i == 0 {
				return Usage{}, err
			}
			continue
		}
		ticks += st.Ticks
		u.WorkingSet += rss
	}
	u.CPU = time.Duration(ticks) * (time.Second / clockTicks)
	return u, nil
}

// readProcess reads one process's stat and resident memory (VmRSS, else
// smaps_rollup's Rss; 0 for a process with neither, such as a zombie).
func (r *Reader) readProcess(pid int) (procStat, int64, error) {
	b, err := fs.ReadFile(r.fsys, procPath(pid, "stat"))
	if err != nil {
		return procStat{}, 0, fmt.Errorf("reading the stat of process %d: %w", pid, err)
	}
	st, err := parseProcStat(b)
	if err != nil {
		return procStat{}, 0, err
	}
	if b, err := fs.ReadFile(r.fsys, procPath(pid, "status")); err == nil {
		if rss, err := parseStatusRSS(b); err == nil {
			return st, rss, nil
		}
	}
	if b, err := fs.ReadFile(r.fsys, procPath(pid, "smaps_rollup")); err == nil {
		if rss, err := parseSmapsRollupRSS(b); err == nil {
			return st, rss, nil
		}
	}
	return st, 0, nil
}

// tree is pid followed by its descendants, from the task children files
// when the kernel has them (CONFIG_PROC_CHILDREN), else by scanning every
// process's parent.
func (r *Reader) tree(pid int) ([]int, error) {
	if _, err := fs.Stat(r.fsys, procPath(pid, "stat")); err != nil {
		return nil, fmt.Errorf("reading process %d: %w", pid, err)
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		kids, err := r.children(out[i])
		if errors.Is(err, errNoChildrenFile) {
			return r.scanTree(pid)
		}
		out = append(out, kids...)
	}
	return out, nil
}

var errNoChildrenFile = errors.New("no task children file")

// children reads every task's children file of pid. A process that is
// gone has no children; a kernel without the files: errNoChildrenFile.
func (r *Reader) children(pid int) ([]int, error) {
	tasks, err := fs.ReadDir(r.fsys, procPath(pid, "task"))
	if err != nil {
		if _, serr := fs.Stat(r.fsys, procPath(pid, "stat")); serr == nil {
			return nil, errNoChildrenFile // a process without task files: scan
		}
		return nil, nil
	}
	var kids []int
	for _, t := range tasks {
		b, err := fs.ReadFile(r.fsys, path.Join(procPath(pid, "task"), t.Name(), "children"))
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := fs.Stat(r.fsys, path.Join(procPath(pid, "task"), t.Name(), "stat")); serr == nil {
				return nil, errNoChildrenFile
			}
			continue // the task exited
		}
		if err != nil {
			continue
		}
		pids, err := parseChildren(b)
		if err != nil {
			return nil, err
		}
		kids = append(kids, pids...)
	}
	return kids, nil
}

// scanTree finds pid's descendants by reading every process's parent.
func (r *Reader) scanTree(pid int) ([]int, error) {
	entries, err := fs.ReadDir(r.fsys, "proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	byParent := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p <= 0 {
			continue
		}
		b, err := fs.ReadFile(r.fsys, procPath(p, "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		if st, err := parseProcStat(b); err == nil && st.PID != pid {
			byParent[st.PPID] = append(byParent[st.PPID], st.PID)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out) && len(out) <= len(entries); i++ {
		out = append(out, byParent[out[i]]...)
	}
	return out, nil
}

func procPath(pid int, file string) string {
	return "proc/" + strconv.Itoa(pid) + "/" + file
}

// Rate is the CPU used between two samples of the same replica, in cores
// (1 = one CPU busy all the time), and false when it cannot be told (no
// time passed, or the counter went back: a restarted replica).
func Rate(prev, cur Usage, elapsed time.Duration) (float64, bool) {
	if elapsed <= 0 || cur.CPU < prev.CPU || cur.Source != prev.Source {
		return 0, false
	}
	return float64(cur.CPU-prev.CPU) / float64(elapsed), true
}
