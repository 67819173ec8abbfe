package resusage

import (
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseProcStat(t *testing.T) {
	recorded, err := os.ReadFile("testdata/proctree/proc/20646/stat")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		in      string
		want    procStat
		wantErr bool
	}{
		{name: "recorded", in: string(recorded), want: procStat{PID: 20646, PPID: 20644, Ticks: 14}},
		{name: "comm with spaces and parens", in: "7 (a) (b c)) R 3 7 7 0 -1 0 0 0 0 0 5 6 7 8 20 0 1 0 9 0 0",
			want: procStat{PID: 7, PPID: 3, Ticks: 26}},
		{name: "no comm", in: "7 R 3", wantErr: true},
		{name: "too short", in: "7 (x) R 3 7 7 0 -1 0 0 0 0 0 5 6", wantErr: true},
		{name: "bad pid", in: "x (x) R 3 7 7 0 -1 0 0 0 0 0 5 6 7 8 20", wantErr: true},
		{name: "negative cutime", in: "7 (x) R 3 7 7 0 -1 0 0 0 0 0 5 6 -7 8 20", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStat([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseSizes(t *testing.T) {
	status, err := os.ReadFile("testdata/proctree/proc/20644/status")
	if err != nil {
		t.Fatal(err)
	}
	smaps, err := os.ReadFile("testdata/proctree/proc/20644/smaps_rollup")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		parse   func([]byte) (int64, error)
		in      string
		want    int64
		wantErr error
	}{
		{"status recorded", parseStatusRSS, string(status), 1720 * 1024, nil},
		{"smaps_rollup recorded", parseSmapsRollupRSS, string(smaps), 1720 * 1024, nil},
		{"zombie: no VmRSS", parseStatusRSS, "Name:\tx\nState:\tZ (zombie)\n", 0, errNoField},
		{"not kB", parseStatusRSS, "VmRSS:\t 12 MB\n", 0, nil},
		{"huge", parseStatusRSS, "VmRSS:\t 99999999999999999 kB\n", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.parse([]byte(tt.in))
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			case tt.wantErr == nil && tt.want == 0 && err == nil:
				t.Fatalf("no error, want one")
			case tt.want != 0 && err != nil:
				t.Fatalf("err = %v", err)
			}
			if got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestParseCgroupFiles(t *testing.T) {
	cpu, err := os.ReadFile("testdata/cgroupv2/sys/fs/cgroup/ebb.slice/hello-1/cpu.stat")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := parseKeyValue(cpu, "usage_usec"); err != nil || v != 2513170 {
		t.Errorf("usage_usec = %d, %v; want 2513170", v, err)
	}
	if _, err := parseKeyValue(cpu, "inactive_file"); !errors.Is(err, errNoField) {
		t.Errorf("missing key: %v, want ErrNoField", err)
	}
	if _, err := parseKeyValue([]byte("usage_usec -1\n"), "usage_usec"); err == nil {
		t.Error("negative usage_usec: no error")
	}
	if v, err := parseUint([]byte("14508032\n")); err != nil || v != 14508032 {
		t.Errorf("memory.current = %d, %v", v, err)
	}
	if _, err := parseUint([]byte("max\n")); err == nil {
		t.Error(`ParseUint("max"): no error`)
	}
	mounts, err := os.ReadFile("testdata/proctree/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := parseCgroup2Mount(mounts); err != nil || m != "/sys/fs/cgroup/unified" {
		t.Errorf("hybrid cgroup2 mount = %q, %v", m, err)
	}
	if _, err := parseCgroup2Mount([]byte("proc /proc proc rw 0 0\n")); !errors.Is(err, errNoField) {
		t.Errorf("no cgroup2: %v, want ErrNoField", err)
	}
	if p, err := parseCgroupV2Path([]byte("4:memory:/x\n0::/ebb.slice/hello-1\n")); err != nil || p != "/ebb.slice/hello-1" {
		t.Errorf("v2 path = %q, %v", p, err)
	}
	if _, err := parseCgroupV2Path([]byte("4:memory:/x\n")); !errors.Is(err, errNoField) {
		t.Errorf("v1 only: %v, want ErrNoField", err)
	}
	if kids, err := parseChildren([]byte("3 4 5 ")); err != nil || !cmp.Equal(kids, []int{3, 4, 5}) {
		t.Errorf("children = %v, %v", kids, err)
	}
	if _, err := parseChildren([]byte("3 x")); err == nil {
		t.Error("children with a bad pid: no error")
	}
}
