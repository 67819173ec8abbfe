package resourcemetrics

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/rest"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsscheme "k8s.io/metrics/pkg/client/clientset/versioned/scheme"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"

	"ebb.dev/ebb/pkg/platform/kubernetes/cluster/clustertest"
)

// benchPods are the 1,000 pods of the recording, started an hour before
// it, and their Deployment with a cpu request.
func benchPods() ([]*corev1.Pod, *appsv1.Deployment) {
	var pods []*corev1.Pod
	d := clustertest.Deployment("hello", 1000, nil)
	d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	for i := range 1000 {
		p := clustertest.ReadyPod("hello", fmt.Sprintf("hello-%d", i), fmt.Sprintf("10.0.%d.%d", i/250, i%250))
		started := metav1.NewTime(metricsAt.Add(-time.Hour))
		p.Status.StartTime = &started
		p.Spec.Containers = d.Spec.Template.Spec.Containers // the pods' own requests, as the template's
		pods = append(pods, p)
	}
	return pods, d
}

// metricsServer answers, over TLS as the API server does, the List of namespace default with the
// recording, in protobuf when the client asks for it first (as the
// aggregated metrics-server does), else in JSON; gzipped when the client
// accepts it, as the API server does an answer over 128 KiB (compressed
// beforehand: that CPU is the server's, not the autoscaler's).
func metricsServer(b testing.TB) *httptest.Server {
	data := readRecordedPodMetrics(b)
	list, err := typedList(data)
	if err != nil {
		b.Fatal(err)
	}
	pb := protobuf.NewSerializer(metricsscheme.Scheme, metricsscheme.Scheme)
	var buf strings.Builder
	if err := pb.Encode(list, &buf); err != nil {
		b.Fatal(err)
	}
	pbData := []byte(buf.String())
	gzipped := map[*[]byte][]byte{&data: gzipBytes(b, data), &pbData: gzipBytes(b, pbData)}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lastRequestHeader.Store(&r.Header)
		if r.URL.Path != "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure",` +
				`"message":"the server is currently unable to handle the request","reason":"ServiceUnavailable","code":503}`))
			return
		}
		body := &data
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(r.Header.Get("Accept"), "application/vnd.kubernetes.protobuf") {
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			body = &pbData
		}
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(gzipped[body])
			return
		}
		w.Write(*body)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// lastRequestHeader is the header of the last request metricsServer had.
var lastRequestHeader atomic.Pointer[http.Header]

func gzipBytes(b testing.TB, data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

func typedList(data []byte) (*metricsv1beta1.PodMetricsList, error) {
	var l metricsv1beta1.PodMetricsList
	_, _, err := metricsscheme.Codecs.UniversalDeserializer().Decode(data, nil, &l)
	return &l, err
}

// metricsClient is the metrics clientset on srv asking for the content
// types accept.
func metricsClient(b testing.TB, srv *httptest.Server, accept string) *metricsclient.MetricsV1beta1Client {
	cfg := &rest.Config{Host: srv.URL, QPS: -1, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	cfg.AcceptContentTypes = accept
	c, err := metricsclient.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// newMetricsSource is what NewMetricsClient makes, on srv.
func newMetricsSource(b testing.TB, srv *httptest.Server) Source {
	s, err := NewClient(&rest.Config{Host: srv.URL, QPS: -1, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// cpuTime is the process's user and system CPU so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// readCost is the CPU per sync of each way of reading, by sub-benchmark
// name, for the ratios the last one reports.
var readCost = map[string]float64{}

// BenchmarkResourceMetricsRead is the whole read the autoscaler does per
// sync for a revision of 1,000 pods: one List of the namespace's
// PodMetrics over HTTP (from a local server answering the recorded
// metrics-server response), its decoding, and every pod's state
// (podState). The target is under 5 ms of CPU per sync: cpu-ms/op is the
// process's CPU (user+system, with the test server's and the GC's share,
// so an upper bound) per sync. The sub-benchmarks are the two ways main
// read it before (the typed client in JSON, and in protobuf, which
// production asked for) and the raw read (Raw, production now);
// the last reports how many times less CPU it takes than each.
func BenchmarkResourceMetricsRead(b *testing.B) {
	srv := metricsServer(b)
	pods, d := benchPods()
	ways := []struct {
		name   string
		source Source
	}{
		{"before-typed-json", typed(metricsClient(b, srv, "application/json"))},
		{"before-typed-protobuf", typed(metricsClient(b, srv, "application/vnd.kubernetes.protobuf,application/json"))},
		{"after-raw-json", newMetricsSource(b, srv)},
	}
	for _, w := range ways {
		b.Run(w.name, func(b *testing.B) {
			r := NewReader(w.source, 0, time.Now) // period 0: a List every call
			ctx := context.Background()
			b.ReportAllocs()
			start := cpuTime(b)
			for b.Loop() {
				usage, err := r.Namespace(ctx, "default")
				if err != nil {
					b.Fatal(err)
				}
				for _, p := range pods {
					if st := PodState(p, d, usage, 9090); st.Containers[0].CPU == nil {
						b.Fatal("no cpu")
					}
				}
			}
			cost := float64(cpuTime(b)-start) / float64(b.N) / 1e6
			b.ReportMetric(cost, "cpu-ms/op")
			readCost[w.name] = cost
			if w.name == "after-raw-json" && cost > 0 {
				for _, before := range []string{"before-typed-json", "before-typed-protobuf"} {
					if c, ok := readCost[before]; ok {
						b.ReportMetric(c/cost, "x-less-cpu-than-"+strings.TrimPrefix(before, "before-"))
					}
				}
			}
		})
	}
}

// BenchmarkDecodePodMetricsList is the decoding alone of the recorded
// 1,000-pod answer; BenchmarkDecodePodMetricsListTyped is client-go's
// decoding of the same bytes, its baseline.
func BenchmarkDecodePodMetricsList(b *testing.B) {
	data := readRecordedPodMetrics(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := decodePodMetricsList(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodePodMetricsListTyped(b *testing.B) {
	data := readRecordedPodMetrics(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := typedDecode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResourceMetricsEbbOnly is Ebb's own share: building 1,000
// pods' states from a decoded answer.
func BenchmarkResourceMetricsEbbOnly(b *testing.B) {
	pods, d := benchPods()
	usage, err := decodePodMetricsList(readRecordedPodMetrics(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range pods {
			if st := PodState(p, d, usage, 9090); st.Containers[0].CPU == nil {
				b.Fatal("no cpu")
			}
		}
	}
}
