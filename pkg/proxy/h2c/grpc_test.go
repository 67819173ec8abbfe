package h2c

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTimeout(t *testing.T) {
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"1S", time.Second, true},
		{"100m", 100 * time.Millisecond, true},
		{"5H", 5 * time.Hour, true},
		{"2M", 2 * time.Minute, true},
		{"7u", 7 * time.Microsecond, true},
		{"99999999n", 99999999, true},
		{"99999999H", math.MaxInt64, true}, // overflows a Duration: the longest one
		{"123456789S", 0, false},           // 9 digits
		{"", 0, false},
		{"S", 0, false},
		{"1", 0, false},
		{"1s", 0, false},
		{"-1S", 0, false},
		{"+1S", 0, false},
		{"1.5S", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			d, ok := Timeout(tt.in)
			if d != tt.want || ok != tt.wantOK {
				t.Errorf("Timeout(%q) = %v, %v; want %v, %v", tt.in, d, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func FuzzTimeout(f *testing.F) {
	for _, s := range []string{"1S", "100m", "99999999H", "", "-1n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, ok := Timeout(s); ok && d < 0 {
			t.Fatalf("Timeout(%q) = %v, ok", s, d)
		} else if !ok && d != 0 {
			t.Fatalf("Timeout(%q) = %v, not ok", s, d)
		}
	})
}

func TestWriteError(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		status      int
		want        []string // status, Content-Type, grpc-status, grpc-message, body
	}{
		{"grpc timeout", "application/grpc", 504, []string{"200", "application/grpc", "4", "too late: 1s", ""}},
		{"grpc+proto overload", "application/grpc+proto", 503, []string{"200", "application/grpc", "14", "too late: 1s", ""}},
		{"plain", "text/plain", 502, []string{"502", "text/plain; charset=utf-8", "", "", "too late: 1s\n"}},
		{"not grpc", "application/grpcx", 504, []string{"504", "text/plain; charset=utf-8", "", "", "too late: 1s\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/x", nil)
			r.Header.Set("Content-Type", tt.contentType)
			w := httptest.NewRecorder()
			WriteError(w, r, tt.status, "too late: 1s\n")
			got := []string{itoa(w.Code), w.Header().Get("Content-Type"), w.Header().Get("Grpc-Status"),
				w.Header().Get("Grpc-Message"), w.Body.String()}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestUpgradeHeaders(t *testing.T) {
	tests := []struct {
		upgrade, settings string
		wantUpgrade       bool
		wantSettings      []byte
		wantOK            bool
	}{
		{"h2c", "AAMAAABk", true, []byte{0, 3, 0, 0, 0, 100}, true},
		{"websocket", "", false, []byte{}, true},
		{"foo, H2C", "AAMAAABk==", true, []byte{0, 3, 0, 0, 0, 100}, true},
		{"h2", "AAMAAA", false, nil, false}, // 4 bytes: not whole settings
		{"h2c", "!!!!", true, nil, false},   // not base64url
	}
	for _, tt := range tests {
		t.Run(tt.upgrade+" "+tt.settings, func(t *testing.T) {
			s, ok := decodeSettings([]byte(tt.settings))
			got := []any{wantsUpgrade([]byte(tt.upgrade)), s, ok}
			if diff := cmp.Diff([]any{tt.wantUpgrade, tt.wantSettings, tt.wantOK}, got); diff != "" {
				t.Errorf("WantsUpgrade, DecodeSettings (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzDecodeSettings(f *testing.F) {
	for _, s := range []string{"", "AAMAAABk", "AAMAAABk==", "!"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if b, ok := decodeSettings([]byte(s)); ok && len(b)%6 != 0 {
			t.Fatalf("DecodeSettings(%q) = %d bytes, ok", s, len(b))
		}
	})
}
