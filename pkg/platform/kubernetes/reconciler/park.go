package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// Parking on Kubernetes: a parked revision keeps its Deployment at one
// replica, and that pod's containers' requests are lowered in place
// through the pod's resize subresource (a strategic merge patch of
// spec.containers[].resources.requests: CPU to the parked request,
// memory to what the container uses but no less than the parked floor,
// and never above what it asked before; limits are not touched). The
// requests it had are kept on the pod (config.PodAnnotationParkedFrom),
// so that a wake restores them even after an autoscaler restart, and
// even for containers the pod template does not hold (an injected
// sidecar, a LimitRange's defaults). The pod stays Ready throughout: the
// activator forwards to it at once, and requests never wait for a resize.
//
// Where the cluster cannot resize (the subresource is missing: the
// feature is off or the API server too old; the change is invalid, such
// as a Guaranteed pod that would change its QoS class; a container whose
// resizePolicy restarts it; RBAC), Park returns autoscaler.ErrParkRefused,
// the Deployment gets one Warning Event (ReasonParkRefused), and the
// status says so: the autoscaler takes the revision to zero instead.
//
// A resize the node has not taken (the pod's PodResizePending condition,
// Deferred or Infeasible; status.resize on older API servers) leaves the
// pod serving with the requests it has: ParkStatus says why.

// Event reasons of parking.
const (
	reasonParked      = "Parked"
	reasonParkRefused = "ParkRefused"
)

// parkState is what the platform knows of a revision's parking.
type parkState struct {
	status autoscaler.ParkStatus
	since  time.Time // when status was set
	warned bool      // the refusal's Event was recorded (once, until a park succeeds)
	// memKept: parked with memory requests kept for want of a usage,
	// last tried at memTried; ParkIncomplete asks for a retry.
	memKept  bool
	memTried time.Time
}

// memoryRetry is how often a parked pod's kept memory requests are tried
// again: metrics-server's scrapes are 10-60 s apart.
const memoryRetry = 15 * time.Second

var _ autoscaler.ParkRefiner = (*Platform)(nil)

// ParkIncomplete implements autoscaler.ParkRefiner: the revision is parked
// with memory requests kept for want of a usage, and a retry is due.
func (p *Platform) ParkIncomplete(key autoscaler.RevisionKey) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.parks[nsName(key)]
	return ok && st.status.State == autoscaler.ParkStateParked && st.memKept && p.o.Now().Sub(st.memTried) >= memoryRetry
}

// memoryFailed records a failed retry of the kept memory requests: a
// refusal ends the retries.
func (p *Platform) memoryFailed(key types.NamespacedName, refused bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st, ok := p.parks[key]; ok {
		st.memTried = p.o.Now()
		st.memKept = st.memKept && !refused
	}
}

// noteMemory records a park's kept memory requests (none: complete) and,
// for a retry that lowered some, says so in the status.
func (p *Platform) noteMemory(key types.NamespacedName, kept, lowered []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.parks[key]
	if !ok {
		return
	}
	st.memKept, st.memTried = len(kept) > 0, p.o.Now()
	if len(lowered) > 0 && st.status.State == autoscaler.ParkStateParked {
		st.status.Message = "the pod runs with its requests lowered"
		if len(kept) > 0 {
			st.status.Message += "; " + memoryKeptNote(kept)
		}
	}
}

// wakeShown is how long a wake stays in the status when no pod shows a
// resize under way: the kubelet sets its conditions within seconds.
const wakeShown = 30 * time.Second

// errNeedsRestart: a container's resizePolicy restarts it to resize.
var errNeedsRestart = errors.New("a container's resizePolicy restarts it to resize (RestartContainer); a parked pod must stay warm")

var _ autoscaler.Parker = (*Platform)(nil)

// Park implements autoscaler.Parker for the revision's ready pods
// (normally its one replica).
func (p *Platform) Park(ctx context.Context, key autoscaler.RevisionKey, req autoscaler.ParkRequest) error {
	d, err := p.deployment(key)
	if err != nil {
		return err
	}
	ctx, err = p.fenced(ctx, nsName(key))
	if err != nil {
		return err
	}
	var n int
	var memKept []string // containers whose memory request stays: no usage known
	var lowered []string // of a pod parked already: memory requests lowered now ("container=quantity")
	here := p.parkedHere(nsName(key))
	for _, cached := range p.inf.podsOf(d) {
		if !cluster.PodReady(cached) {
			continue
		}
		n++
		if _, marked := cached.Annotations[config.PodAnnotationParkedFrom]; !req.Parked && !marked && !here {
			continue // a wake of a pod no one parked (the cache says; this process parked none): no call
		}
		pod, err := p.o.Client.CoreV1().Pods(key.Namespace).Get(ctx, cached.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("parking %s: reading pod %s: %w", key, cached.Name, err)
		}
		if req.Parked {
			var kept, low []string
			kept, low, err = p.parkPod(ctx, pod, req)
			memKept, lowered = append(memKept, kept...), append(lowered, low...)
		} else {
			err = p.wakePod(ctx, d, pod)
		}
		if err != nil && req.Parked && here {
			// A retry of the memory requests failed: the pod stays parked
			// as it is; a refusal ends the retries, another error waits
			// for the next.
			p.memoryFailed(nsName(key), refusal(err))
			return fmt.Errorf("lowering the memory requests of parked pod %s of %s: %w", pod.Name, key, err)
		}
		if err != nil {
			return p.parkFailed(d, key, pod.Name, req.Parked, err)
		}
	}
	if n == 0 && req.Parked {
		return fmt.Errorf("parking %s: no ready pod yet", key)
	}
	if req.Parked && here {
		// Parked already: a retry of the memory requests kept for want
		// of a usage (ParkIncomplete).
		p.noteMemory(nsName(key), memKept, lowered)
		if len(lowered) > 0 {
			slices.Sort(lowered)
			p.rec.Event(d, corev1.EventTypeNormal, reasonParked, truncate("parked: memory request lowered to what the container uses: "+
				strings.Join(lowered, ", ")))
		}
		return nil
	}
	state, msg := autoscaler.ParkStateParked, "the pod runs with its requests lowered"
	if len(memKept) > 0 {
		msg += "; " + memoryKeptNote(memKept)
	}
	if !req.Parked {
		state, msg = autoscaler.ParkStateWaking, "the pod's requests are going back to what it asked before it was parked"
	}
	p.setPark(nsName(key), autoscaler.ParkStatus{State: state, Message: msg}, req.Parked)
	if req.Parked {
		p.noteMemory(nsName(key), memKept, nil)
		mem := fmt.Sprintf("memory request what each container uses, at least %s", resource.NewQuantity(req.MemoryRequestBytes, resource.BinarySI))
		if len(memKept) > 0 {
			mem = memoryKeptNote(memKept)
		}
		p.rec.Event(d, corev1.EventTypeNormal, reasonParked, truncate(fmt.Sprintf("parked: CPU request %s; %s; limits unchanged",
			config.FormatMilliCPU(req.CPURequestMilli), mem)))
	}
	return nil
}

// memoryKeptNote says why the memory requests of containers stayed as
// they asked while parked.
func memoryKeptNote(containers []string) string {
	slices.Sort(containers)
	return "memory request unchanged for " + strings.Join(slices.Compact(containers), ", ") +
		": no memory usage from the resource metrics API yet (metrics-server missing, or no sample of the pod yet)," +
		" and it never goes below what the container uses; tried again every " + memoryRetry.String() + " while parked"
}

// parkFailed turns a failed park or wake into the error the autoscaler
// reads: a refusal (ErrParkRefused, one Warning Event) or a failure to
// retry.
func (p *Platform) parkFailed(d *appsv1.Deployment, key autoscaler.RevisionKey, pod string, parked bool, err error) error {
	verb := "waking"
	if parked {
		verb = "parking"
	}
	if !parked || !refusal(err) {
		return fmt.Errorf("%s %s: pod %s: %w", verb, key, pod, err)
	}
	msg := fmt.Sprintf("the pod %s cannot be parked (its requests lowered in place): %v; the revision goes to zero instead", pod, err)
	if first := p.setPark(nsName(key), autoscaler.ParkStatus{State: autoscaler.ParkStateRefused, Reason: reasonParkRefused,
		Message: truncate(msg)}, false); first {
		p.rec.Event(d, corev1.EventTypeWarning, reasonParkRefused, truncate(msg))
	}
	p.log.Warn("parking refused", zap.String("revision", key.String()), zap.String("pod", pod), zap.Error(err))
	return fmt.Errorf("%s %s: pod %s: %w: %w", verb, key, pod, autoscaler.ErrParkRefused, err)
}

// refusal reports whether err says the cluster will not resize the pod:
// no resize subresource (feature off, old API server), an invalid or
// forbidden change, or a container that would restart.
func refusal(err error) bool {
	return errors.Is(err, errNeedsRestart) || apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) ||
		apierrors.IsBadRequest(err) || apierrors.IsMethodNotSupported(err)
}

// setPark records a revision's parking status; for a refusal it reports
// whether it is the first since the last successful park (its Event is
// then due).
func (p *Platform) setPark(key types.NamespacedName, s autoscaler.ParkStatus, parked bool) (first bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.parks[key]
	if !ok {
		st = &parkState{}
		p.parks[key] = st
	}
	st.status, st.since = s, p.o.Now()
	if parked {
		st.warned = false
	}
	if s.State == autoscaler.ParkStateRefused && !st.warned {
		st.warned, first = true, true
	}
	return first
}

// requests is a container's cpu and memory requests as a pod annotation
// keeps them ("" where it has none).
type requests struct {
	CPU    string `json:"cpu,omitempty"`
	Memory string `json:"memory,omitempty"`
}

// parkPod lowers pod's requests: CPU to req's, memory to its usage (the
// resource metrics API) but at least req's floor, each only where it is
// lower than what the container asks. Without a usage the memory request
// stays: it must never go below what the container uses. It returns the
// containers whose memory request stayed for want of a usage, and for a
// pod parked already those whose memory request it lowers now
// (lowerMemory).
func (p *Platform) parkPod(ctx context.Context, pod *corev1.Pod, req autoscaler.ParkRequest) (memKept, lowered []string, err error) {
	if _, parked := pod.Annotations[config.PodAnnotationParkedFrom]; parked {
		return p.lowerMemory(ctx, pod, req) // parked already (a retry, or the autoscaler restarted)
	}
	usage := p.memoryUsage(ctx, pod)
	from, to := map[string]requests{}, map[string]requests{}
	cpu := resource.NewMilliQuantity(req.CPURequestMilli, resource.DecimalSI)
	for _, c := range pod.Spec.Containers {
		var was, want requests
		if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok && q.Cmp(*cpu) > 0 {
			was.CPU, want.CPU = q.String(), cpu.String()
		}
		if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
			if used, known := usage[c.Name]; known {
				floor := resource.NewQuantity(max(used, req.MemoryRequestBytes), resource.BinarySI)
				if q.Cmp(*floor) > 0 {
					was.Memory, want.Memory = q.String(), floor.String()
				}
			} else if q.Cmp(*resource.NewQuantity(req.MemoryRequestBytes, resource.BinarySI)) > 0 {
				memKept = append(memKept, c.Name)
			}
		}
		if want == (requests{}) {
			continue
		}
		if err := restartFree(c, want); err != nil {
			return nil, nil, fmt.Errorf("container %s: %w", c.Name, err)
		}
		from[c.Name], to[c.Name] = was, want
	}
	if len(to) == 0 {
		return memKept, nil, nil // nothing asks for more than a parked pod: nothing to lower
	}
	if err := p.annotateParked(ctx, pod, from); err != nil {
		return nil, nil, err
	}
	if err := p.resize(ctx, pod, to); err != nil {
		// Not parked after all: the record goes (best effort; a wake of a
		// pod whose requests were never lowered restores what it has).
		if uerr := p.dropParkedRecord(ctx, pod); uerr != nil {
			p.log.Debug("removing the parked-from annotation failed", zap.String("pod", pod.Name), zap.Error(uerr))
		}
		return nil, nil, err
	}
	return memKept, nil, nil
}

// lowerMemory lowers the memory requests of a parked pod that were kept
// for want of a usage, now that the resource metrics API has one (to it,
// at least the floor), recording the requests they had with the rest. A
// container whose resizePolicy would restart it for memory keeps its
// request: a parked pod stays warm. It returns the containers still
// without a usage, and those lowered ("name=quantity").
func (p *Platform) lowerMemory(ctx context.Context, pod *corev1.Pod, req autoscaler.ParkRequest) (memKept, lowered []string, err error) {
	var from map[string]requests
	if json.Unmarshal([]byte(pod.Annotations[config.PodAnnotationParkedFrom]), &from) != nil || from == nil {
		return nil, nil, nil // a record it cannot extend safely: the memory requests stay
	}
	floorQ := resource.NewQuantity(req.MemoryRequestBytes, resource.BinarySI)
	var usage map[string]int64
	to := map[string]requests{}
	for _, c := range pod.Spec.Containers {
		q, ok := c.Resources.Requests[corev1.ResourceMemory]
		if !ok || from[c.Name].Memory != "" || q.Cmp(*floorQ) <= 0 {
			continue // none, lowered already, or no more than the floor
		}
		if restartFree(c, requests{Memory: q.String()}) != nil {
			continue
		}
		if usage == nil {
			usage = p.memoryUsage(ctx, pod)
		}
		used, known := usage[c.Name]
		if !known {
			memKept = append(memKept, c.Name)
			continue
		}
		floor := resource.NewQuantity(max(used, req.MemoryRequestBytes), resource.BinarySI)
		if q.Cmp(*floor) <= 0 {
			continue
		}
		was := from[c.Name]
		was.Memory = q.String()
		from[c.Name] = was
		to[c.Name] = requests{Memory: floor.String()}
		lowered = append(lowered, c.Name+"="+floor.String())
	}
	if len(to) == 0 {
		return memKept, nil, nil
	}
	if err := p.annotateParked(ctx, pod, from); err != nil {
		return nil, nil, err
	}
	if err := p.resize(ctx, pod, to); err != nil {
		// The record names requests the pod still has: a wake restores
		// them as they are.
		return nil, nil, err
	}
	return memKept, lowered, nil
}

// restartFree checks that resizing what want changes does not restart c.
func restartFree(c corev1.Container, want requests) error {
	for _, rp := range c.ResizePolicy {
		changes := rp.ResourceName == corev1.ResourceCPU && want.CPU != "" || rp.ResourceName == corev1.ResourceMemory && want.Memory != ""
		if changes && rp.RestartPolicy == corev1.RestartContainer {
			return errNeedsRestart
		}
	}
	return nil
}

// wakePod restores the requests pod had before it was parked (its
// annotation; the Deployment template's where it has none), then drops
// the annotation.
func (p *Platform) wakePod(ctx context.Context, d *appsv1.Deployment, pod *corev1.Pod) error {
	raw, parked := pod.Annotations[config.PodAnnotationParkedFrom]
	if !parked {
		return nil // not parked (a pod that came since, or woken already)
	}
	var from map[string]requests
	if err := json.Unmarshal([]byte(raw), &from); err != nil || len(from) == 0 {
		from = templateRequests(d)
	}
	if err := p.resize(ctx, pod, from); err != nil {
		return err
	}
	return p.dropParkedRecord(ctx, pod)
}

// dropParkedRecord removes config.PodAnnotationParkedFrom from the pod.
func (p *Platform) dropParkedRecord(ctx context.Context, pod *corev1.Pod) error {
	patch := []byte(`{"metadata":{"annotations":{"` + config.PodAnnotationParkedFrom + `":null}}}`)
	_, err := p.o.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// templateRequests are the requests of the Deployment template's
// containers.
func templateRequests(d *appsv1.Deployment) map[string]requests {
	out := map[string]requests{}
	for _, c := range d.Spec.Template.Spec.Containers {
		var r requests
		if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
			r.CPU = q.String()
		}
		if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
			r.Memory = q.String()
		}
		if r != (requests{}) {
			out[c.Name] = r
		}
	}
	return out
}

// annotateParked records on the pod the requests it had.
func (p *Platform) annotateParked(ctx context.Context, pod *corev1.Pod, from map[string]requests) error {
	v, err := json.Marshal(from)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{config.PodAnnotationParkedFrom: string(v)}}})
	if err != nil {
		return err
	}
	_, err = p.o.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// resizePatch is the strategic merge patch of the resize subresource:
// containers merge by name, and only the requests named change.
type resizePatch struct {
	Spec struct {
		Containers []resizeContainer `json:"containers"`
	} `json:"spec"`
}

type resizeContainer struct {
	Name      string `json:"name"`
	Resources struct {
		Requests requests `json:"requests"`
	} `json:"resources"`
}

// resize writes the requests to through the pod's resize subresource.
func (p *Platform) resize(ctx context.Context, pod *corev1.Pod, to map[string]requests) error {
	var rp resizePatch
	for _, c := range pod.Spec.Containers { // in the pod's order
		r, ok := to[c.Name]
		if !ok || r == (requests{}) {
			continue
		}
		rc := resizeContainer{Name: c.Name}
		rc.Resources.Requests = r
		rp.Spec.Containers = append(rp.Spec.Containers, rc)
	}
	if len(rp.Spec.Containers) == 0 {
		return nil
	}
	patch, err := json.Marshal(rp)
	if err != nil {
		return err
	}
	_, err = p.o.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize")
	return err
}

// memoryUsage is the working set of pod's containers in bytes, from the
// resource metrics API; empty without it.
func (p *Platform) memoryUsage(ctx context.Context, pod *corev1.Pod) map[string]int64 {
	out := map[string]int64{}
	if p.metrics == nil {
		return out
	}
	usage, err := p.metrics.Namespace(ctx, pod.Namespace)
	if err != nil {
		p.log.Debug("no memory usage to park on; memory requests stay", zap.String("pod", pod.Name), zap.Error(err))
		return out
	}
	for _, c := range usage[pod.Name].Containers {
		if c.HasMemory {
			out[c.Name] = (c.MemMilli + 999) / 1000
		}
	}
	return out
}

var _ autoscaler.ParkReporter = (*Platform)(nil)

// ParkStatus implements autoscaler.ParkReporter: the revision's parking
// as last set, unless one of its pods has a resize the node has not taken
// (Deferred, Infeasible) or is still resizing. A wake is forgotten once
// no pod resizes, wakeShown after it.
func (p *Platform) ParkStatus(key autoscaler.RevisionKey) (autoscaler.ParkStatus, bool) {
	k := nsName(key)
	p.mu.Lock()
	st, ok := p.parks[k]
	var s autoscaler.ParkStatus
	var since time.Time
	if ok {
		s, since = st.status, st.since
	}
	p.mu.Unlock()
	if !ok || s.State == autoscaler.ParkStateRefused {
		return s, ok
	}
	d, err := p.deployment(key)
	if err != nil {
		return s, true
	}
	resizing := false
	for _, pod := range p.inf.podsOf(d) {
		if reason, msg, pending := resizePending(pod); pending {
			return autoscaler.ParkStatus{State: autoscaler.ParkStatePending, Reason: reason,
				Message: "pod " + pod.Name + ": the node has not taken the resize (" + reason + "): " + msg +
					"; it serves with the requests it has, and the revision scales out as decided"}, true
		}
		resizing = resizing || resizeInProgress(pod)
	}
	if s.State == autoscaler.ParkStateWaking && !resizing && p.o.Now().Sub(since) >= wakeShown {
		p.mu.Lock()
		if cur, ok := p.parks[k]; ok && cur.status.State == autoscaler.ParkStateWaking {
			delete(p.parks, k)
		}
		p.mu.Unlock()
		return autoscaler.ParkStatus{}, false
	}
	return s, true
}

// resizePending reports a resize the node has not taken: the pod's
// PodResizePending condition, or status.resize on older API servers.
func resizePending(pod *corev1.Pod) (reason, message string, ok bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizePending && c.Status == corev1.ConditionTrue {
			return c.Reason, c.Message, true
		}
	}
	switch r := pod.Status.Resize; r { // the field older API servers write
	case corev1.PodResizeStatusDeferred, corev1.PodResizeStatusInfeasible:
		return string(r), "status.resize", true
	}
	return "", "", false
}

// resizeInProgress reports a resize the kubelet is applying.
func resizeInProgress(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizeInProgress && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return pod.Status.Resize == corev1.PodResizeStatusInProgress
}

// parkedHere reports whether this process parked the revision (its pods'
// cached copies may not show the annotation yet).
func (p *Platform) parkedHere(key types.NamespacedName) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.parks[key]
	return ok && st.status.State == autoscaler.ParkStateParked
}

// forgetPark drops a revision's parked or waking state (it went to zero).
func (p *Platform) forgetPark(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st, ok := p.parks[key]; ok && st.status.State != autoscaler.ParkStateRefused {
		delete(p.parks, key)
	}
}
