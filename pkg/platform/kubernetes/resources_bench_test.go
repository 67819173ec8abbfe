package kubernetes

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"ebb.dev/ebb/pkg/platform/kubernetes/cluster/clustertest"
)

// metricsResponse is a PodMetricsList of n pods with two containers each,
// as metrics-server answers it (JSON), and the pods and Deployment.
func metricsResponse(b *testing.B, n int) ([]byte, []*corev1.Pod, *appsv1.Deployment) {
	b.Helper()
	list := metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: "metrics.k8s.io/v1beta1"}}
	var pods []*corev1.Pod
	for i := range n {
		name := fmt.Sprintf("hello-%d", i)
		list.Items = append(list.Items, *podMetrics("default", name, [3]string{"app", fmt.Sprintf("%dm", 50+i%100), "41Mi"},
			[3]string{"queue-proxy", "3m", "12Mi"}))
		p := clustertest.ReadyPod("hello", name, fmt.Sprintf("10.0.%d.%d", i/250, i%250))
		started := metav1.NewTime(metricsAt.Add(-time.Hour))
		p.Status.StartTime = &started
		pods = append(pods, p)
	}
	data, err := json.Marshal(list)
	if err != nil {
		b.Fatal(err)
	}
	d := clustertest.Deployment("hello", int32(n), nil)
	d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	return data, pods, d
}

// BenchmarkResourceMetrics1000Pods is one sync's resource-metrics work for
// a revision of 1,000 pods: decoding the metrics API's answer, indexing it,
// and building every pod's state (the target is under 5 ms of CPU).
// BenchmarkResourceMetricsDecodeOnly is its baseline: the JSON decoding
// alone, which client-go does in any case.
func BenchmarkResourceMetrics1000Pods(b *testing.B) {
	data, pods, d := metricsResponse(b, 1000)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var list metricsv1beta1.PodMetricsList
		if err := json.Unmarshal(data, &list); err != nil {
			b.Fatal(err)
		}
		usage := UsageByPod(list.Items)
		for _, p := range pods {
			if st := podState(p, d, usage, 9090); st.Containers[0].CPU == nil {
				b.Fatal("no cpu")
			}
		}
	}
}

// BenchmarkResourceMetrics1000PodsProtobuf is the same sync with the
// answer in protobuf, which NewMetricsClient asks for first.
func BenchmarkResourceMetrics1000PodsProtobuf(b *testing.B) {
	data, pods, d := metricsResponse(b, 1000)
	var list metricsv1beta1.PodMetricsList
	if err := json.Unmarshal(data, &list); err != nil {
		b.Fatal(err)
	}
	pb, err := list.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(pb)))
	for b.Loop() {
		var list metricsv1beta1.PodMetricsList
		if err := list.Unmarshal(pb); err != nil {
			b.Fatal(err)
		}
		usage := UsageByPod(list.Items)
		for _, p := range pods {
			if st := podState(p, d, usage, 9090); st.Containers[0].CPU == nil {
				b.Fatal("no cpu")
			}
		}
	}
}

// BenchmarkResourceMetricsEbbOnly is Ebb's own share: indexing a decoded
// answer and building 1,000 pods' states.
func BenchmarkResourceMetricsEbbOnly(b *testing.B) {
	data, pods, d := metricsResponse(b, 1000)
	var list metricsv1beta1.PodMetricsList
	if err := json.Unmarshal(data, &list); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		usage := UsageByPod(list.Items)
		for _, p := range pods {
			if st := podState(p, d, usage, 9090); st.Containers[0].CPU == nil {
				b.Fatal("no cpu")
			}
		}
	}
}

func BenchmarkResourceMetricsDecodeOnly(b *testing.B) {
	data, _, _ := metricsResponse(b, 1000)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var list metricsv1beta1.PodMetricsList
		if err := json.Unmarshal(data, &list); err != nil {
			b.Fatal(err)
		}
	}
}
