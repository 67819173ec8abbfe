package reconciler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"ebb.dev/ebb/pkg/autoscaler"
)

var _ autoscaler.DeletionCoster = (*Platform)(nil)

// maxDeletionCost bounds a pod's cost (the annotation is an int32).
const maxDeletionCost = math.MaxInt32

// deletionCost is the pod-deletion-cost of a load: its requests in flight
// in hundredths, so that 0.5 in flight outranks 0.2; an unknown load
// costs nothing.
func deletionCost(l autoscaler.PodLoad) int32 {
	if !l.Known || !(l.InFlight > 0) {
		return 0
	}
	return int32(min(math.Round(l.InFlight*100), maxDeletionCost))
}

// SetDeletionCosts implements autoscaler.DeletionCoster: it sets
// controller.kubernetes.io/pod-deletion-cost on each of the revision's
// pods from its load (the ReplicaSet controller removes the cheapest
// first), writing only the costs that changed since it last wrote them.
func (p *Platform) SetDeletionCosts(ctx context.Context, key autoscaler.RevisionKey, loads []autoscaler.PodLoad) error {
	if _, err := p.deployment(key); err != nil {
		return err
	}
	ctx, err := p.fenced(ctx, nsName(key))
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range loads {
		pod, err := p.inf.pods.Pods(key.Namespace).Get(l.Name)
		if err != nil {
			continue // gone since it was listed
		}
		cost := deletionCost(l)
		p.mu.Lock()
		last, ok := p.costs[pod.UID]
		p.mu.Unlock()
		if ok && last == cost {
			continue
		}
		patch := []byte(`{"metadata":{"annotations":{"` + corev1.PodDeletionCost + `":"` + strconv.Itoa(int(cost)) + `"}}}`)
		if _, err := p.o.Client.CoreV1().Pods(key.Namespace).Patch(ctx, l.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", l.Name, err))
			continue
		}
		p.mu.Lock()
		p.costs[pod.UID] = cost
		p.mu.Unlock()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("setting %s on the pods of %s: %w", corev1.PodDeletionCost, key, err)
	}
	return nil
}
