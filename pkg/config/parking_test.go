package config

import (
	"strings"
	"testing"
	"time"
)

func TestParkingRevision(t *testing.T) {
	const e = EbbAutoscalingPrefix
	runRevisionCases(t, []revisionCase{
		{name: "off by default", want: func(*Revision) {}},
		{name: "from the ConfigMap",
			config: map[string]string{KeyEnableParking: "true", KeyParkedCPURequest: "0.005", KeyParkedMemoryRequest: "32Mi",
				KeyMaxParkedDuration: "0s", KeyParkedCost: "0.2"},
			want: func(r *Revision) {
				r.Parking = Parking{Enabled: true, CPURequestMilli: 5, MemoryRequestBytes: 32 << 20, Cost: 0.2}
			}},
		{name: "annotations win",
			config: map[string]string{KeyEnableParking: "false", KeyParkedCPURequest: "5m"},
			anns: map[string]string{e + "enable-parking": "true", e + "parked-cpu-request": "2m", e + "parked-memory-request": "1Gi",
				e + "max-parked-duration": "30m", e + "parked-cost": "0.05"},
			want: func(r *Revision) {
				r.Parking = Parking{Enabled: true, CPURequestMilli: 2, MemoryRequestBytes: 1 << 30, MaxDuration: 30 * time.Minute, Cost: 0.05}
			}},
		{name: "bad annotations, all at once",
			anns: map[string]string{e + "enable-parking": "yes", e + "parked-cpu-request": "0.0005", e + "parked-memory-request": "12",
				e + "max-parked-duration": "1.5s", e + "parked-cost": "0"},
			wantErrs: []string{e + "enable-parking", e + "parked-cpu-request", e + "parked-memory-request", e + "max-parked-duration", e + "parked-cost"}},
	})
}

func TestParkingKeysErrors(t *testing.T) {
	_, err := NewAutoscalerFromMap(map[string]string{KeyParkedCPURequest: "1 m", KeyParkedMemoryRequest: "16MB",
		KeyMaxParkedDuration: "200h", KeyParkedCost: "1.5"})
	if err == nil {
		t.Fatal("no error for four bad parking keys")
	}
	for _, want := range []string{
		`"parked-cpu-request" = "1 m": must be a CPU quantity`,
		`"parked-memory-request" = "16MB": must be a memory quantity`,
		`"max-parked-duration" = "200h": must be within [0s, 168h]`,
		`"parked-cost" = "1.5": must be within (0, 1]`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestParseQuantities(t *testing.T) {
	cpu := []struct {
		in   string
		want int64
		ok   bool
	}{{"1m", 1, true}, {"250m", 250, true}, {"0.25", 250, true}, {"2", 2000, true}, {"0m", 0, false}, {"0.0001", 0, false},
		{"1001", 0, false}, {"m", 0, false}, {"NaN", 0, false}, {"-1m", 0, false}}
	for _, c := range cpu {
		got, v := parseMilliCPU(c.in)
		if (v == nil) != c.ok || got != c.want && c.ok {
			t.Errorf("parseMilliCPU(%q) = %d, %v; want %d, ok %v", c.in, got, v, c.want, c.ok)
		}
	}
	mem := []struct {
		in   string
		want int64
		ok   bool
	}{{"16Mi", 16 << 20, true}, {"1024", 1024, true}, {"1Ki", 1024, true}, {"2G", 2e9, true}, {"1023", 0, false},
		{"1.5Mi", 0, false}, {"2Pi", 0, false}, {"Mi", 0, false}, {"9223372036854775807Ti", 0, false}}
	for _, c := range mem {
		got, v := parseBytes(c.in)
		if (v == nil) != c.ok || got != c.want && c.ok {
			t.Errorf("parseBytes(%q) = %d, %v; want %d, ok %v", c.in, got, v, c.want, c.ok)
		}
	}
}
