package reconciler

import (
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// reasonSidecarMissing: pods of a revision run without the queue-proxy
// they opted in to (cluster.SidecarMissing).
const reasonSidecarMissing = "SidecarMissing"

// maxNamedPods bounds the pods an Event names (the rest are counted).
const maxNamedPods = 5

// checkSidecars warns of the revision's pods that opted in to the
// queue-proxy and run without it: a Warning Event on the Deployment, and
// again only when the set of such pods changes. The webhook's
// failurePolicy Fail never lets one through while it is configured, so
// such a pod was made without it (docs/kubernetes.md, "Failure policy").
// Such a pod never answers the queue-proxy's probe, so it is never routed
// to; it still counts as a replica of the Deployment. It is not deleted
// here: its replacement would pass the same admission, so when that is
// what let it through, deleting would only churn; the Event says how to
// replace it once the webhook is back.
func (p *Platform) checkSidecars(d *appsv1.Deployment, pods []*corev1.Pod) {
	key := types.NamespacedName{Namespace: d.Namespace, Name: d.Name}
	var bare []string
	for _, pod := range pods {
		if pod.DeletionTimestamp == nil && cluster.SidecarMissing(pod) {
			bare = append(bare, pod.Name)
		}
	}
	slices.Sort(bare)
	seen := strings.Join(bare, ",")
	p.mu.Lock()
	prev := p.bare[key]
	if seen == "" {
		delete(p.bare, key)
	} else {
		p.bare[key] = seen
	}
	p.mu.Unlock()
	if seen == "" || seen == prev {
		return
	}
	msg := sidecarMissingMessage(key, bare, len(pods))
	p.log.Warn("pods run without the queue-proxy", zap.String("deployment", key.String()), zap.Strings("pods", bare), zap.String("message", msg))
	p.rec.Event(d, corev1.EventTypeWarning, reasonSidecarMissing, msg)
}

// forgetSidecars drops what checkSidecars said of a revision (gone, or
// decided elsewhere now: its next holder says it again). p.mu is held.
func (p *Platform) forgetSidecars(key types.NamespacedName) { delete(p.bare, key) }

// sidecarMissingMessage says which pods of the revision (of total) run
// without the queue-proxy, why, and what to do.
func sidecarMissingMessage(key types.NamespacedName, bare []string, total int) string {
	named := strings.Join(bare[:min(len(bare), maxNamedPods)], ", ")
	if len(bare) > maxNamedPods {
		named += fmt.Sprintf(" and %d more", len(bare)-maxNamedPods)
	}
	return fmt.Sprintf("%d of %d pods run without the queue-proxy (%s): the sidecar injection webhook never saw them "+
		"(created before Ebb was installed, while the MutatingWebhookConfiguration %s was missing or its failurePolicy was not Fail, "+
		"or in a namespace Ebb never injects into), so no request is routed to them and the revision is short of them; "+
		"check that kubectl get mutatingwebhookconfiguration %s shows failurePolicy Fail, then replace them: "+
		"kubectl -n %s rollout restart deployment %s",
		len(bare), total, named, config.WebhookConfigName, config.WebhookConfigName, key.Namespace, key.Name)
}
