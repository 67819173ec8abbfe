package resusage

import (
	"errors"
	"io/fs"
	"os"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The recorded trees:
//   - proctree: a real cgroup v1 host (cgroup2 mounted at
//     /sys/fs/cgroup/unified, every process in its root), a shell 20644
//     with a child shell 20646 (which had spun for 14 ticks) and two
//     sleeps; the kernel has no task children files, so the tree is found
//     by scanning parents.
//   - cgroupv2: a cgroup v2 host where process 42 runs in a cgroup of its
//     own and process 43 in the autoscaler's (files in the kernel's format).
func TestReaderRead(t *testing.T) {
	tests := []struct {
		name string
		root string
		pid  int
		want Usage
	}{{
		name: "proc tree, scanned: utime+stime+cutime+cstime and VmRSS over 4 processes",
		root: "testdata/proctree", pid: 20644,
		want: Usage{CPU: 150 * time.Millisecond, WorkingSet: (1720 + 1692 + 1812 + 1844) * 1024, Source: SourceProc},
	}, {
		name: "proc subtree", root: "testdata/proctree", pid: 20646,
		want: Usage{CPU: 140 * time.Millisecond, WorkingSet: (1692 + 1844) * 1024, Source: SourceProc},
	}, {
		name: "a leaf", root: "testdata/proctree", pid: 20647,
		want: Usage{WorkingSet: 1812 * 1024, Source: SourceProc},
	}, {
		name: "own cgroup v2: usage_usec, memory.current - inactive_file",
		root: "testdata/cgroupv2", pid: 42,
		want: Usage{CPU: 2513170 * time.Microsecond, WorkingSet: 14508032 - 3190784, Source: sourceCgroup},
	}, {
		name: "in the reader's own cgroup: proc", root: "testdata/cgroupv2", pid: 43,
		want: Usage{CPU: 140 * time.Millisecond, WorkingSet: 1692 * 1024, Source: SourceProc},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewReader(os.DirFS(tt.root)).Read(tt.pid)
			if err != nil {
				t.Fatalf("Read(%d): %v", tt.pid, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Read(%d) (-want +got):\n%s", tt.pid, diff)
			}
		})
	}
}

func stat(pid, ppid int, utime, stime int) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(itoa(pid) + " (a b) c)) S " + itoa(ppid) +
		" 1 1 0 -1 4194304 84 0 0 0 " + itoa(utime) + " " + itoa(stime) + " 0 0 20 0 1 0 100 2654208 382\n")}
}

func itoa(i int) string { return string(fmtInt(i)) }

func fmtInt(i int) []byte {
	if i == 0 {
		return []byte{'0'}
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return b
}

// With task children files (CONFIG_PROC_CHILDREN), the tree follows them
// through every task, and a process without VmRSS falls back to
// smaps_rollup.
func TestReaderChildrenFiles(t *testing.T) {
	fsys := fstest.MapFS{
		"proc/10/stat":              stat(10, 1, 100, 50),
		"proc/10/status":            {Data: []byte("Name:\tapp\nVmRSS:\t    1000 kB\n")},
		"proc/10/task/10/stat":      {},
		"proc/10/task/10/children":  {Data: []byte("11 ")},
		"proc/10/task/12/stat":      {},
		"proc/10/task/12/children":  {Data: []byte("13\n")},
		"proc/11/stat":              stat(11, 10, 7, 3),
		"proc/11/status":            {Data: []byte("Name:\tkid\n")},
		"proc/11/smaps_rollup":      {Data: []byte("00400000-7ff [rollup]\nRss:                 500 kB\nPss: 1 kB\n")},
		"proc/11/task/11/stat":      {},
		"proc/11/task/11/children":  {},
		"proc/13/stat":              stat(13, 10, 1, 0),
		"proc/13/task/13/stat":      {},
		"proc/13/task/13/children":  {Data: []byte("14")},  // 14 exited meanwhile
		"proc/99/stat":              stat(99, 10, 1000, 0), // not listed as a child: not counted
		"proc/99/task/99/children":  {},
		"proc/99/task/99/stat":      {},
		"proc/10/task/10/unrelated": {},
	}
	got, err := NewReader(fsys).Read(10)
	if err != nil {
		t.Fatal(err)
	}
	want := Usage{CPU: 161 * 10 * time.Millisecond, WorkingSet: 1500 * 1024, Source: SourceProc}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestReaderErrors(t *testing.T) {
	if _, err := NewReader(os.DirFS("testdata/proctree")).Read(7); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read of a process that is gone: %v, want fs.ErrNotExist", err)
	}
	bad := fstest.MapFS{"proc/5/stat": {Data: []byte("5 (x) S")}}
	if _, err := NewReader(bad).Read(5); !errors.Is(err, errNoField) {
		t.Errorf("Read of a short stat: %v, want ErrNoField", err)
	}
	// A cgroup of its own without the memory controller: from /proc.
	noMem := fstest.MapFS{
		"proc/mounts":              {Data: []byte("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n")},
		"proc/self/cgroup":         {Data: []byte("0::/a\n")},
		"proc/5/cgroup":            {Data: []byte("0::/b\n")},
		"proc/5/stat":              stat(5, 1, 2, 0),
		"sys/fs/cgroup/b/cpu.stat": {Data: []byte("usage_usec 9\n")},
	}
	got, err := NewReader(noMem).Read(5)
	if err != nil || got.Source != SourceProc || got.CPU != 20*time.Millisecond {
		t.Errorf("Read without memory.current = %+v, %v; want 20ms from proc", got, err)
	}
}

func TestRate(t *testing.T) {
	a := Usage{CPU: time.Second, Source: SourceProc}
	tests := []struct {
		name      string
		prev, cur Usage
		elapsed   time.Duration
		want      float64
		ok        bool
	}{
		{"half a core", a, Usage{CPU: 1500 * time.Millisecond, Source: SourceProc}, time.Second, 0.5, true},
		{"two cores", a, Usage{CPU: 5 * time.Second, Source: SourceProc}, 2 * time.Second, 2, true},
		{"counter went back (restart)", a, Usage{Source: SourceProc}, time.Second, 0, false},
		{"source changed", a, Usage{CPU: 2 * time.Second, Source: sourceCgroup}, time.Second, 0, false},
		{"no time", a, a, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Rate(tt.prev, tt.cur, tt.elapsed)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Rate = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// The reader on this machine's own /proc: the test process uses some CPU
// and memory. Skipped where /proc is not Linux's.
func TestReaderLive(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc: the reader runs on Linux only")
	}
	u, err := NewReader(os.DirFS("/")).Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.WorkingSet <= 0 {
		t.Errorf("working set of the test process = %d, want > 0", u.WorkingSet)
	}
}
