package resusage

import (
	"os"
	"testing"
)

// FuzzParsers feeds every parser the same bytes: none may panic, and what
// they accept must be in range.
func FuzzParsers(f *testing.F) {
	for _, p := range []string{
		"testdata/proctree/proc/20646/stat", "testdata/proctree/proc/20644/status",
		"testdata/proctree/proc/20644/smaps_rollup", "testdata/proctree/proc/mounts",
		"testdata/cgroupv2/sys/fs/cgroup/ebb.slice/hello-1/memory.stat",
		"testdata/cgroupv2/sys/fs/cgroup/ebb.slice/hello-1/cpu.stat",
	} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("1 ()) R 0"))
	f.Add([]byte("0::/\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if st, err := parseProcStat(b); err == nil && (st.PID <= 0 || st.PPID < 0) {
			t.Errorf("ParseProcStat accepted %q as %+v", b, st)
		}
		for _, parse := range []func([]byte) (int64, error){parseStatusRSS, parseSmapsRollupRSS} {
			if v, err := parse(b); err == nil && v < 0 {
				t.Errorf("a size parser accepted %q as %d", b, v)
			}
		}
		if kids, err := parseChildren(b); err == nil {
			for _, k := range kids {
				if k <= 0 {
					t.Errorf("ParseChildren accepted %q with pid %d", b, k)
				}
			}
		}
		parseKeyValue(b, "usage_usec")
		parseUint(b)
		if p, err := parseCgroupV2Path(b); err == nil && (p == "" || p[0] != '/') {
			t.Errorf("ParseCgroupV2Path accepted %q as %q", b, p)
		}
		parseCgroup2Mount(b)
	})
}
