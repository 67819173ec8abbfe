package main

import (
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/platform/kubernetes/revisionstatus"
)

// newStatusWriter is the RevisionAutoscaler status writer of cmd/autoscaler
// at limit writes/s, against a fake API that takes every write and keeps
// nothing (what is measured is the writer's work and its write rate).
func newStatusWriter(as *autoscaler.Autoscaler, limit float64) *revisionstatus.Writer {
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{revisionstatus.GVR: revisionstatus.Kind + "List"})
	c.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &unstructured.Unstructured{Object: map[string]any{}}, nil
	})
	return revisionstatus.New(revisionstatus.Options{Client: c, Summaries: as.EachSummary, Status: as.StatusOf, Limit: rate.Limit(limit)})
}

func statusWriteCount(w *revisionstatus.Writer) uint64 {
	if w == nil {
		return 0
	}
	return w.Writes()
}
