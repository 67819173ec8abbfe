package stats

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func validStat() Stat {
	return Stat{
		Source:                    SourceQueueProxy,
		PodName:                   "hello-00001-deployment-7d9f-abcde",
		Time:                      time.Unix(1_700_000_000, 123),
		Period:                    time.Second,
		ProcessUptime:             42 * time.Second,
		AverageConcurrency:        3.25,
		AverageProxiedConcurrency: 1.5,
		RequestCount:              120,
		ProxiedRequestCount:       7,
	}
}

func TestRoundTrip(t *testing.T) {
	activator := validStat()
	activator.Source = SourceActivator
	activator.Revision = "default/hello-00001"
	activator.Period = 0
	longest := validStat()
	longest.PodName = strings.Repeat("p", MaxPodNameLen)
	longest.Revision = strings.Repeat("r", MaxRevisionLen)
	tests := []struct {
		name string
		in   Stat
		len  int
	}{
		{name: "queue-proxy", in: validStat(), len: minWireLen + len(validStat().PodName)},
		{name: "activator event", in: activator, len: minWireLen + len(activator.PodName) + len(activator.Revision)},
		{name: "empty", in: Stat{Source: SourceQueueProxy}, len: minWireLen},
		{name: "longest names", in: longest, len: MaxWireLen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.in.MarshalBinary()
			if err != nil {
				t.Fatalf("MarshalBinary: %v", err)
			}
			if len(b) != tt.len {
				t.Errorf("encoded length = %d, want %d", len(b), tt.len)
			}
			var got Stat
			if err := got.UnmarshalBinary(b); err != nil {
				t.Fatalf("UnmarshalBinary: %v", err)
			}
			if diff := cmp.Diff(tt.in, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLayout pins the documented byte layout (doc.go).
func TestLayout(t *testing.T) {
	s := Stat{Source: SourceActivator, PodName: "a", Revision: "ns/r", Time: time.Unix(0, 1), Period: 2,
		ProcessUptime: 3, AverageConcurrency: 1, AverageProxiedConcurrency: 0.5, RequestCount: 4, ProxiedRequestCount: 4}
	got, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{'e', 'b', 1, 2,
		0, 0, 0, 0, 0, 0, 0, 1, // time
		0, 0, 0, 0, 0, 0, 0, 2, // period
		0, 0, 0, 0, 0, 0, 0, 3, // uptime
		0x3f, 0xf0, 0, 0, 0, 0, 0, 0, // 1.0
		0x3f, 0xe0, 0, 0, 0, 0, 0, 0, // 0.5
		0, 0, 0, 0, 0, 0, 0, 4,
		0, 0, 0, 0, 0, 0, 0, 4,
		1, 'a', 4, 'n', 's', '/', 'r'}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layout (-want +got):\n%s", diff)
	}
}

func TestMarshalRejects(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Stat)
	}{
		{name: "no source", mutate: func(s *Stat) { s.Source = 0 }},
		{name: "unknown source", mutate: func(s *Stat) { s.Source = 3 }},
		{name: "long pod", mutate: func(s *Stat) { s.PodName = strings.Repeat("x", MaxPodNameLen+1) }},
		{name: "long revision", mutate: func(s *Stat) { s.Revision = strings.Repeat("x", MaxRevisionLen+1) }},
		{name: "negative period", mutate: func(s *Stat) { s.Period = -1 }},
		{name: "negative uptime", mutate: func(s *Stat) { s.ProcessUptime = -1 }},
		{name: "NaN concurrency", mutate: func(s *Stat) { s.AverageConcurrency = math.NaN() }},
		{name: "infinite concurrency", mutate: func(s *Stat) { s.AverageConcurrency = math.Inf(1) }},
		{name: "negative concurrency", mutate: func(s *Stat) { s.AverageConcurrency, s.AverageProxiedConcurrency = -1, -1 }},
		{name: "proxied above total", mutate: func(s *Stat) { s.AverageProxiedConcurrency = s.AverageConcurrency + 1 }},
		{name: "proxied count above total", mutate: func(s *Stat) { s.ProxiedRequestCount = s.RequestCount + 1 }},
		{name: "absurd concurrency", mutate: func(s *Stat) { s.AverageConcurrency = 1e308 }},
		{name: "NaN proxied concurrency", mutate: func(s *Stat) { s.AverageProxiedConcurrency = math.NaN() }},
		{name: "absurd request rate", mutate: func(s *Stat) { s.RequestCount, s.ProxiedRequestCount = 1<<62, 0 }},
		{name: "absurd event count", mutate: func(s *Stat) { s.Period, s.RequestCount, s.ProxiedRequestCount = 0, maxRequestRate+1, 0 }},
		{name: "period of a day", mutate: func(s *Stat) { s.Period = 24 * time.Hour }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validStat()
			tt.mutate(&s)
			if _, err := s.MarshalBinary(); !errors.Is(err, errInvalid) {
				t.Errorf("MarshalBinary error = %v, want ErrInvalid", err)
			}
		})
	}
}

// TestBoundsNamed: a value out of bounds is refused with its field, the
// value and the bound in the error, and a value at the bound is taken.
func TestBoundsNamed(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Stat)
		want   string // "" = valid
	}{
		{name: "concurrency 1e308", mutate: func(s *Stat) { s.AverageConcurrency = 1e308 },
			want: "average concurrency 1e+308 must be finite and within [0, 1e+06]"},
		{name: "concurrency at the bound", mutate: func(s *Stat) { s.AverageConcurrency = maxConcurrency }},
		{name: "rate above the bound", mutate: func(s *Stat) { s.RequestCount, s.ProxiedRequestCount = 2e7, 0 },
			want: "request count 20000000 over period 1s exceeds 10000000 (1e+07 requests/s)"},
		{name: "short period", mutate: func(s *Stat) { s.Period, s.RequestCount = time.Microsecond, maxRequestRate }},
		{name: "long period", mutate: func(s *Stat) { s.Period, s.RequestCount = time.Minute, 60*maxRequestRate }},
		{name: "rate at the bound", mutate: func(s *Stat) { s.RequestCount = maxRequestRate }},
		{name: "period above the bound", mutate: func(s *Stat) { s.Period = maxPeriod + 1 },
			want: "period 1h0m0.000000001s must be within [0, 1h0m0s]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validStat()
			tt.mutate(&s)
			b, err := s.MarshalBinary()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("MarshalBinary: %v", err)
				}
				var got Stat
				if err := got.UnmarshalBinary(b); err != nil {
					t.Errorf("UnmarshalBinary: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("MarshalBinary error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestUnmarshalRejects(t *testing.T) {
	s := validStat()
	good, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{name: "empty", in: nil, want: errShort},
		{name: "truncated", in: good[:len(good)-1], want: errShort},
		{name: "trailing byte", in: append(bytes.Clone(good), 0), want: errInvalid},
		{name: "bad magic", in: edit(func(b []byte) []byte { b[0] = 'x'; return b }), want: errMagic},
		{name: "version 2", in: edit(func(b []byte) []byte { b[2] = 2; return b }), want: errVersion},
		{name: "source 0", in: edit(func(b []byte) []byte { b[3] = 0; return b }), want: errInvalid},
		{name: "pod length too long", in: edit(func(b []byte) []byte { b[fixedLen] = 255; return b }), want: errShort},
		{name: "negative concurrency", in: edit(func(b []byte) []byte { b[offConcurrency] = 0xbf; return b }), want: errInvalid},
		{name: "concurrency 1e308", in: edit(func(b []byte) []byte { return setFloat(b, offConcurrency, 1e308) }), want: errInvalid},
		{name: "concurrency +Inf", in: edit(func(b []byte) []byte { return setFloat(b, offConcurrency, math.Inf(1)) }), want: errInvalid},
		{name: "concurrency NaN", in: edit(func(b []byte) []byte { return setFloat(b, offConcurrency, math.NaN()) }), want: errInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := validStat()
			got.PodName = "unchanged"
			err := got.UnmarshalBinary(tt.in)
			if !errors.Is(err, tt.want) {
				t.Errorf("UnmarshalBinary error = %v, want %v", err, tt.want)
			}
			if got.PodName != "unchanged" {
				t.Errorf("UnmarshalBinary changed the Stat on error")
			}
		})
	}
}

func TestRates(t *testing.T) {
	tests := []struct {
		name               string
		stat               Stat
		wantRate, wantProx float64
	}{
		{name: "one second", stat: Stat{Period: time.Second, RequestCount: 10, ProxiedRequestCount: 4}, wantRate: 10, wantProx: 4},
		{name: "two seconds", stat: Stat{Period: 2 * time.Second, RequestCount: 10, ProxiedRequestCount: 4}, wantRate: 5, wantProx: 2},
		{name: "event", stat: Stat{RequestCount: 1, ProxiedRequestCount: 1}, wantRate: 1, wantProx: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := []float64{tt.stat.RequestRate(), tt.stat.ProxiedRequestRate()}
			if diff := cmp.Diff([]float64{tt.wantRate, tt.wantProx}, got); diff != "" {
				t.Errorf("rates (-want +got):\n%s", diff)
			}
		})
	}
}

func setFloat(b []byte, off int, f float64) []byte {
	binary.BigEndian.PutUint64(b[off:], math.Float64bits(f))
	return b
}

// FuzzUnmarshal: decoding never panics, whatever decodes re-encodes to the
// same bytes (the encoding is canonical), and its numbers are finite and
// within their bounds.
func FuzzUnmarshal(f *testing.F) {
	s := validStat()
	good, _ := s.MarshalBinary()
	f.Add(good)
	s.Source, s.Revision = SourceActivator, "ns/rev"
	act, _ := s.MarshalBinary()
	f.Add(act)
	f.Add([]byte{})
	f.Add([]byte("eb\x01\x01"))
	f.Add(setFloat(bytes.Clone(act), offConcurrency, 1e308))
	f.Fuzz(func(t *testing.T, b []byte) {
		var got Stat
		if err := got.UnmarshalBinary(b); err != nil {
			return
		}
		checkFinite(t, got)
		again, err := got.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded stat does not encode: %v", err)
		}
		if !bytes.Equal(b, again) {
			t.Fatalf("not canonical:\n in  %x\n out %x", b, again)
		}
	})
}

func BenchmarkAppendBinary(b *testing.B) {
	s := validStat()
	buf := make([]byte, 0, MaxWireLen)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = s.appendBinary(buf[:0])
	}
}

// checkFinite fails when a decoded Stat holds a number the autoscaler
// cannot average: not finite, negative or out of bounds.
func checkFinite(t *testing.T, s Stat) {
	t.Helper()
	for _, f := range []float64{s.AverageConcurrency, s.AverageProxiedConcurrency, s.RequestRate(), s.ProxiedRequestRate()} {
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			t.Fatalf("decoded stat holds %v: %+v", f, s)
		}
	}
	if s.AverageConcurrency > maxConcurrency || s.RequestCount > maxRequestCount(s.Period) || s.Period > maxPeriod {
		t.Fatalf("decoded stat is out of bounds: %+v", s)
	}
}
