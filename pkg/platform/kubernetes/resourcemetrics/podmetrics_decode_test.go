package resourcemetrics

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsscheme "k8s.io/metrics/pkg/client/clientset/versioned/scheme"

	"ebb.dev/ebb/internal/golden"
)

const recordedPodMetricsFile = "testdata/podmetrics-1000.json.gz"

// recordedPodMetrics is a PodMetricsList of n pods hello-0..n-1 in
// "default" as metrics-server v0.9 answers a List: the pods' labels, a
// timestamp per node scrape, cpu in nanocores ("123456789n") and working
// set in bytes (a multiple of the page size: "43212Ki"), an app container
// and a queue-proxy. Deterministic: the same n gives the same bytes.
func recordedPodMetrics(n int) *metricsv1beta1.PodMetricsList {
	list := &metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: "metrics.k8s.io/v1beta1"}}
	seed := uint64(14)
	rnd := func(m uint64) int64 { // an LCG: stable across Go versions
		seed = seed*6364136223846793005 + 1442695040888963407
		return int64((seed >> 33) % m)
	}
	for i := range n {
		node := i % 3
		at := metav1.NewTime(metricsAt.Add(time.Duration(node) * time.Second))
		app := metricsv1beta1.ContainerMetrics{Name: "app", Usage: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewScaledQuantity(20_000_000+rnd(200_000_000), -9),
			corev1.ResourceMemory: *resource.NewQuantity((8_000+rnd(20_000))*4096, resource.BinarySI)}}
		qp := metricsv1beta1.ContainerMetrics{Name: "queue-proxy", Usage: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewScaledQuantity(1_000_000+rnd(5_000_000), -9),
			corev1.ResourceMemory: *resource.NewQuantity((2_000+rnd(2_000))*4096, resource.BinarySI)}}
		list.Items = append(list.Items, metricsv1beta1.PodMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("hello-%d", i), Namespace: "default", CreationTimestamp: metav1.NewTime(metricsAt.Add(3 * time.Second)),
				Labels: map[string]string{"app": "hello", "pod-template-hash": "5d8f9c7b6d", "ebb.dev/revision": "hello"}},
			Timestamp: at, Window: metav1.Duration{Duration: 10*time.Second + time.Duration(node)*time.Millisecond},
			Containers: []metricsv1beta1.ContainerMetrics{app, qp}})
	}
	return list
}

// readRecordedPodMetrics is the recorded 1,000-pod answer (rewritten by
// go test -run TestRecordedPodMetrics -update).
func readRecordedPodMetrics(tb testing.TB) []byte {
	tb.Helper()
	f, err := os.Open(recordedPodMetricsFile)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(zr); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func TestRecordedPodMetrics(t *testing.T) {
	want, err := json.Marshal(recordedPodMetrics(1000))
	if err != nil {
		t.Fatal(err)
	}
	if golden.Updating() {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(want)
		zw.Close()
		if err := os.MkdirAll(filepath.Dir(recordedPodMetricsFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(recordedPodMetricsFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := readRecordedPodMetrics(t); !bytes.Equal(got, want) {
		t.Errorf("%s is not what recordedPodMetrics(1000) gives; rewrite it with -update", recordedPodMetricsFile)
	}
}

// typedDecode is how client-go's typed client reads the same answer.
func typedDecode(data []byte) (map[string]PodUsage, error) {
	var l metricsv1beta1.PodMetricsList
	if _, _, err := metricsscheme.Codecs.UniversalDeserializer().Decode(data, nil, &l); err != nil {
		return nil, err
	}
	return usageByPod(l.Items), nil
}

// diffDecoders is "" when both decoders fail or both give the same usage.
func diffDecoders(data []byte) string {
	want, werr := typedDecode(data)
	got, gerr := decodePodMetricsList(data)
	if (werr != nil) != (gerr != nil) {
		return fmt.Sprintf("typed error %v, DecodePodMetricsList error %v", werr, gerr)
	}
	if werr != nil {
		return ""
	}
	return cmp.Diff(want, got)
}

const podMetricsHead = `{"kind":"PodMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":`

// The raw decoder gives what the typed decoding gives, on the recording
// and on the edges of what metrics-server and the aggregation layer send.
func TestDecodePodMetricsListMatchesTyped(t *testing.T) {
	item := func(name, containers string) string {
		return `{"metadata":{"name":"` + name + `","namespace":"default"},"timestamp":"2026-11-25T07:00:00Z","window":"15s","containers":` + containers + `}`
	}
	tests := []struct{ name, data string }{
		{"recorded 1,000 pods", string(readRecordedPodMetrics(t))},
		{"no pods", podMetricsHead + `[]}`},
		{"items null", podMetricsHead + `null}`},
		{"no items key", `{"kind":"PodMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{}}`},
		{"empty containers", podMetricsHead + `[` + item("a", `[]`) + `]}`},
		{"containers null", podMetricsHead + `[` + item("a", `null`) + `]}`},
		{"container without usage", podMetricsHead + `[` + item("a", `[{"name":"app"}]`) + `]}`},
		{"memory only", podMetricsHead + `[` + item("a", `[{"name":"app","usage":{"memory":"64Mi"}}]`) + `]}`},
		{"odd quantities", podMetricsHead + `[` + item("a", `[{"name":"app","usage":{"cpu":"1.5","memory":"1e3"}},`+
			`{"name":"b","usage":{"cpu":"0.0001","memory":"100M"}},{"name":"c","usage":{"cpu":"+2","memory":"12345678"}},`+
			`{"name":"d","usage":{"cpu":" 250m ","memory":"5E-3"}},{"name":"e","usage":{"cpu":"1","memory":"0"}},`+
			`{"name":"f","usage":{"cpu":"999999999999999999999n","memory":"8Ei"}},{"name":"g","usage":{"cpu":"-3m","memory":"1Ti"}},`+
			`{"name":"h","usage":{"cpu":"1234567u","memory":"07Ki"}},{"name":"i","usage":{"cpu":"1k","memory":"2G"}}]`) + `]}`},
		{"bare numbers and null quantities", podMetricsHead + `[` + item("a", `[{"name":"app","usage":{"cpu":2,"memory":null}}]`) + `]}`},
		{"other resources are not read", podMetricsHead + `[` + item("a", `[{"name":"app","usage":{"cpu":"1","memory":"1","nvidia.com/gpu":"1"}}]`) + `]}`},
		{"null and missing fields", podMetricsHead + `[{"metadata":{"name":null},"containers":[{"name":null,"usage":null}]},{"timestamp":null}]}`},
		{"escaped names, fractional time, long window", podMetricsHead +
			`[{"metadata":{"name":"h\u0065llo"},"timestamp":"2026-11-25T07:00:00.5+01:00","window":"1m30.25s","containers":[]}]}`},
		{"unknown fields", podMetricsHead + `[` + item("a", `[{"name":"app","usage":{"cpu":"1"},"extra":[1,{"x":null}]}]`) + `],"more":{"a":[true]}}`},
		{"a pod listed twice: the last counts", podMetricsHead + `[` + item("a", `[{"name":"x","usage":{"cpu":"1"}}]`) + `,` +
			item("a", `[{"name":"y","usage":{"cpu":"2"}}]`) + `]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := decodePodMetricsList([]byte(tt.data)); err != nil {
				t.Fatalf("DecodePodMetricsList: %v", err)
			}
			if diff := diffDecoders([]byte(tt.data)); diff != "" {
				t.Errorf("typed decoding vs DecodePodMetricsList (-typed +raw):\n%s", diff)
			}
		})
	}
}

// Malformed answers are errors that say where; none panics.
func TestDecodePodMetricsListErrors(t *testing.T) {
	good := `{"metadata":{"name":"p"},"timestamp":"2026-11-25T07:00:00Z","window":"15s","containers":[{"name":"app","usage":{"cpu":"1","memory":"1Mi"}}]}`
	tests := []struct{ name, data, want string }{
		{"not JSON", `<html>`, "decoding a PodMetricsList: cannot parse JSON"},
		{"truncated", podMetricsHead + `[` + good, "cannot parse JSON"},
		{"not an object", `[]`, "the answer is a JSON array, not an object"},
		{"a Status", `{"kind":"Status","apiVersion":"v1","status":"Failure"}`, `the answer is a "Status"`},
		{"items not an array", podMetricsHead + `{}}`, "items is a JSON object, not an array"},
		{"item not an object", podMetricsHead + `[` + good + `,3]}`, `items[1] (pod ""): is a JSON number, not an object`},
		{"name not a string", podMetricsHead + `[{"metadata":{"name":7}}]}`, `items[0] (pod ""): metadata.name is a JSON number, not a string`},
		{"metadata not an object", podMetricsHead + `[{"metadata":"p"}]}`, `items[0] (pod ""): metadata is a JSON string, not an object`},
		{"bad timestamp", podMetricsHead + `[{"metadata":{"name":"p"},"timestamp":"yesterday"}]}`, `items[0] (pod "p"): timestamp: parsing time "yesterday"`},
		{"timestamp a number", podMetricsHead + `[{"metadata":{"name":"p"},"timestamp":1}]}`, `items[0] (pod "p"): timestamp is a JSON number, not a string`},
		{"bad window", podMetricsHead + `[{"metadata":{"name":"p"},"window":"15"}]}`, `items[0] (pod "p"): window: time: missing unit in duration "15"`},
		{"null window", podMetricsHead + `[{"metadata":{"name":"p"},"window":null}]}`, `items[0] (pod "p"): window: time: invalid duration ""`},
		{"containers an object", podMetricsHead + `[{"metadata":{"name":"p"},"containers":{}}]}`, `items[0] (pod "p"): containers is a JSON object, not an array`},
		{"container not an object", podMetricsHead + `[{"metadata":{"name":"p"},"containers":[1]}]}`,
			`items[0] (pod "p"): containers[0] (container ""): is a JSON number, not an object`},
		{"usage an array", podMetricsHead + `[{"metadata":{"name":"p"},"containers":[{"name":"app","usage":[]}]}]}`,
			`containers[0] (container "app"): usage is a JSON array, not an object`},
		{"bad cpu", podMetricsHead + `[{"metadata":{"name":"p"},"containers":[{"name":"app","usage":{"cpu":"12x"}}]}]}`,
			`items[0] (pod "p"): containers[0] (container "app"): usage.cpu: "12x" is not a quantity (such as 250m, 1500n or 64Mi): quantities must match`},
		{"memory an object", podMetricsHead + `[{"metadata":{"name":"p"},"containers":[{"name":"app","usage":{"memory":{}}}]}]}`,
			`containers[0] (container "app"): usage.memory is a JSON object, not a quantity`},
		{"empty cpu", podMetricsHead + `[{"metadata":{"name":"p"},"containers":[{"name":"app","usage":{"cpu":""}}]}]}`, `usage.cpu: "" is not a quantity`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodePodMetricsList([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// The fast path of MilliValue agrees with ParseQuantity(s).MilliValue().
func TestMilliValue(t *testing.T) {
	for _, s := range []string{"0", "1", "123n", "999999n", "1000001n", "1u", "1500u", "250m", "1k", "3M", "2G",
		"4567Ki", "64Mi", "1Gi", "999999999999999", "999999999999999Gi", "1234567890123456", "0n", "007m"} {
		q := resource.MustParse(s)
		got, err := milliValue([]byte(s))
		if err != nil || got != q.MilliValue() {
			t.Errorf("MilliValue(%q) = %d, %v; want %d", s, got, err, q.MilliValue())
		}
	}
}

func FuzzMilliValue(f *testing.F) {
	for _, s := range []string{"123n", "4567Ki", "250m", "1", "1.5", "1e3", "-3m", "", "12x", " 1 ", "999999999999999Gi", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := milliValue([]byte(s))
		q, qerr := resource.ParseQuantity(strings.TrimSpace(s))
		if (err != nil) != (qerr != nil) {
			t.Fatalf("MilliValue(%q) error %v, ParseQuantity error %v", s, err, qerr)
		}
		if err == nil && got != q.MilliValue() {
			t.Fatalf("MilliValue(%q) = %d, ParseQuantity gives %d", s, got, q.MilliValue())
		}
	})
}

// FuzzDecodePodMetricsList: any bytes are a usage map or an error, never a
// panic; a List built from fuzzed names, times and quantities decodes the
// same as the typed decoding does.
func FuzzDecodePodMetricsList(f *testing.F) {
	f.Add([]byte(podMetricsHead+`[{"metadata":{"name":"p"},"timestamp":"2026-11-25T07:00:00Z","window":"15s",`+
		`"containers":[{"name":"app","usage":{"cpu":"123n","memory":"64Mi"}}]}]}`),
		"p", "2026-11-25T07:00:00Z", "15s", "123n", "4567Ki")
	f.Add([]byte(`{"items":[{"containers":[{"usage":{"cpu":1}}]}]}`), "", "", "10.5s", "1.5", "1e3")
	f.Add([]byte(`{"items":[null]}`), "h\u00e9llo", "2026-11-25T07:00:00.123+02:00", "1m", "-1", "")
	f.Fuzz(func(t *testing.T, data []byte, name, ts, window, cpu, mem string) {
		if _, err := decodePodMetricsList(data); err != nil && err.Error() == "" {
			t.Fatal("an error without a message")
		}
		built, err := json.Marshal(map[string]any{"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "items": []any{
			map[string]any{"metadata": map[string]any{"name": name}, "timestamp": ts, "window": window,
				"containers": []any{map[string]any{"name": "app", "usage": map[string]string{"cpu": cpu, "memory": mem}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := diffDecoders(built); diff != "" {
			t.Errorf("%s: typed decoding vs DecodePodMetricsList (-typed +raw):\n%s", built, diff)
		}
	})
}

// NewMetricsClient's source lists over HTTP, uncompressed JSON, and a
// failed List (an aggregated API that is down) is an error.
func TestRawPodMetrics(t *testing.T) {
	src := newMetricsSource(t, metricsServer(t))
	pods, err := src.ListPodMetrics(context.Background(), "default")
	if err != nil || len(pods) != 1000 {
		t.Fatalf("ListPodMetrics(default) = %d pods, %v; want the 1,000 recorded", len(pods), err)
	}
	if h := *lastRequestHeader.Load(); h.Get("Accept") != "application/json" || h.Get("Accept-Encoding") != "" {
		t.Errorf("asked with Accept %q, Accept-Encoding %q; want JSON, uncompressed", h.Get("Accept"), h.Get("Accept-Encoding"))
	}
	want, err := typedDecode(readRecordedPodMetrics(t))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, pods); diff != "" {
		t.Errorf("(-typed +raw):\n%s", diff)
	}
	if _, err := src.ListPodMetrics(context.Background(), "other"); err == nil || !strings.Contains(err.Error(), "unable to handle the request") {
		t.Errorf("a 503: error %v", err)
	}
}
