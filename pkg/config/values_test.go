package config

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/fielderr"
)

func TestParseContainerConcurrency(t *testing.T) {
	tests := []struct {
		name, raw string
		want      int32
		wantErr   *fielderr.Error
	}{
		{"unlimited", "0", 0, nil},
		{"a limit", "10", 10, nil},
		{"the largest", "1000", 1000, nil},
		{"above the largest", "1001", 0, &fielderr.Error{Source: sourceAnnotation, Key: AnnotationContainerConcurrency, Value: "1001",
			Rule: "must be within [0, 1000] (Knative's container-concurrency-max-limit)",
			Fix:  "set the most requests one pod handles at once, 1 to 1000, or 0 for unlimited"}},
		{"negative", "-1", 0, &fielderr.Error{Source: sourceAnnotation, Key: AnnotationContainerConcurrency, Value: "-1",
			Rule: "must be within [0, 1000] (Knative's container-concurrency-max-limit)",
			Fix:  "set the most requests one pod handles at once, 1 to 1000, or 0 for unlimited"}},
		{"not a number", "many", 0, &fielderr.Error{Source: sourceAnnotation, Key: AnnotationContainerConcurrency, Value: "many",
			Rule: "must be a whole number", Fix: `write digits only, such as "10"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseContainerConcurrency(tc.raw)
			if got != tc.want {
				t.Errorf("ParseContainerConcurrency(%q) = %d, want %d", tc.raw, got, tc.want)
			}
			if diff := cmp.Diff(tc.wantErr, err); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseLoadBalancing(t *testing.T) {
	for _, raw := range append([]string{""}, LoadBalancingPolicies...) {
		want := raw
		if raw == "" {
			want = LoadBalancingAuto
		}
		if got, err := ParseLoadBalancing(raw); got != want || err != nil {
			t.Errorf("ParseLoadBalancing(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	_, err := ParseLoadBalancing("fastest")
	want := &fielderr.Error{Source: sourceAnnotation, Key: AnnotationLoadBalancing, Value: "fastest",
		Rule: "must be auto, power-of-two-choices, first-available or round-robin",
		Fix:  "remove the annotation for Knative's rule, or name one of the four policies"}
	if diff := cmp.Diff(want, err); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

// TestUpstreamProtocolOfPort: Knative's rule, a port named h2c and
// nothing else means h2c; every value is one of UpstreamProtocols.
func TestUpstreamProtocolOfPort(t *testing.T) {
	tests := []struct{ port, want string }{
		{"h2c", UpstreamH2C},
		{"http1", UpstreamHTTP1},
		{"", UpstreamHTTP1},
		{"http", UpstreamHTTP1},
		{"H2C", UpstreamHTTP1}, // port names are lower case in Kubernetes; Knative compares exactly
		{"grpc", UpstreamHTTP1},
	}
	for _, tt := range tests {
		t.Run(tt.port, func(t *testing.T) {
			got := upstreamProtocolOfPort(tt.port)
			if got != tt.want {
				t.Errorf("UpstreamProtocolOfPort(%q) = %q, want %q", tt.port, got, tt.want)
			}
			if !slices.Contains(UpstreamProtocols, got) {
				t.Errorf("%q is not one of %q", got, UpstreamProtocols)
			}
		})
	}
}

// TestUpstreamProtocolAnnotation: the annotation takes http1 or h2c and
// wins over the port name; anything else is an error naming the key.
func TestUpstreamProtocolAnnotation(t *testing.T) {
	tests := []struct {
		name, raw, port, want string
		wantErr               bool
	}{
		{"absent, plain port", "", "http", UpstreamHTTP1, false},
		{"absent, h2c port", "", "h2c", UpstreamH2C, false},
		{"h2c on a plain port", "h2c", "", UpstreamH2C, false},
		{"http1 wins over the h2c port", "http1", "h2c", UpstreamHTTP1, false},
		{"unknown", "grpc", "", "", true},
		{"upper case", "H2C", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := ParseUpstreamProtocol(tt.raw)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseUpstreamProtocol(%q) error = %v, want error %v", tt.raw, err, tt.wantErr)
			}
			if err != nil {
				if err.Key != AnnotationUpstreamProtocol {
					t.Errorf("error key = %q, want %q", err.Key, AnnotationUpstreamProtocol)
				}
				return
			}
			if got := ResolveUpstreamProtocol(v, tt.port); got != tt.want {
				t.Errorf("ResolveUpstreamProtocol(%q, %q) = %q, want %q", v, tt.port, got, tt.want)
			}
		})
	}
}
