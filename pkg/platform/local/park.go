package local

import (
	"context"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/autoscaler"
)

// Parking, locally: a parked revision's replica keeps running, Ready and
// reachable through the activator, and is marked parked (its log line,
// ParkStatus, and so `autoscaler status` and the API). A process has no
// resource requests to lower, so nothing else changes: the local
// platform shows the state and its transitions, the Kubernetes platform
// frees the node's capacity.

var (
	_ autoscaler.Parker       = (*Platform)(nil)
	_ autoscaler.ParkReporter = (*Platform)(nil)
)

// Park implements autoscaler.Parker: it marks the revision's replicas
// parked or awake.
func (p *Platform) Park(_ context.Context, key autoscaler.RevisionKey, req autoscaler.ParkRequest) error {
	s, err := p.supervisor(key)
	if err != nil {
		return err
	}
	if s.parked.Swap(req.Parked) == req.Parked {
		return nil
	}
	names := make([]string, 0, 1)
	for _, r := range s.replicaList() {
		names = append(names, r.name)
	}
	if req.Parked {
		s.log.Info("parked: the replica keeps running, marked parked (locally no request to lower)", zap.Strings("replicas", names))
	} else {
		s.log.Info("woken: the parked replica serves as before", zap.Strings("replicas", names))
	}
	return nil
}

// ParkStatus implements autoscaler.ParkReporter: parked while the
// revision's replica is.
func (p *Platform) ParkStatus(key autoscaler.RevisionKey) (autoscaler.ParkStatus, bool) {
	s, err := p.supervisor(key)
	if err != nil || !s.parked.Load() {
		return autoscaler.ParkStatus{}, false
	}
	return autoscaler.ParkStatus{State: autoscaler.ParkStateParked, Message: "the replica keeps running, marked parked"}, true
}
