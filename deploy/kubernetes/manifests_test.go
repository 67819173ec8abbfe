// Package kubernetes holds Ebb's manifests for a cluster (applied with
// kubectl apply -k deploy/) and the example revision; this test keeps them
// decodable, consistent with the code and least-privileged. The
// integration tests (test/k8s) apply them to a real control plane.
package kubernetes

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/config/hpa"
	"ebb.dev/ebb/pkg/platform/kubernetes/learnedstore"
	kplat "ebb.dev/ebb/pkg/platform/kubernetes/reconciler"
	"ebb.dev/ebb/pkg/platform/kubernetes/statsauth"
	"ebb.dev/ebb/pkg/stats"
)

// docs splits the YAML files of this directory into documents by kind.
func docs(t *testing.T) map[string][][]byte {
	t.Helper()
	files, _ := filepath.Glob("*.yaml")
	out := map[string][][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			var head struct{ Kind string }
			if err := yaml.Unmarshal(doc, &head); err != nil || head.Kind == "" {
				t.Fatalf("%s: a document without a kind: %v", f, err)
			}
			out[head.Kind] = append(out[head.Kind], doc)
		}
	}
	return out
}

func strict[T any](t *testing.T, doc []byte) *T {
	t.Helper()
	var v T
	if err := yaml.UnmarshalStrict(doc, &v); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	return &v
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	data, err := os.ReadFile("../kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct{ Resources []string }
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(filepath.Join("..", r)); err != nil {
			t.Errorf("kustomization resource %s: %v", r, err)
		}
	}
	files, _ := filepath.Glob("*.yaml")
	for _, f := range files {
		if f != "example-app.yaml" && !slices.Contains(k.Resources, "kubernetes/"+f) {
			t.Errorf("%s is not in deploy/kustomization.yaml", f)
		}
	}
}

// TestExampleAppIsARevision: the short form opts in (the label on the
// Deployment and on its pod template), its annotations validate, it has
// the app container only, and the webhook injects it.
func TestExampleAppIsARevision(t *testing.T) {
	d := deployment(t, "hello")
	if d.Labels[config.LabelEnabled] != "true" || d.Spec.Template.Labels[config.LabelEnabled] != "true" {
		t.Fatalf("Deployment hello labels %v, template labels %v: want %s on both", d.Labels, d.Spec.Template.Labels, config.LabelEnabled)
	}
	if _, err := config.NewRevision(config.Defaults(), d.Spec.Template.Annotations, hpa.DocumentParser{}); err != nil {
		t.Errorf("the annotations do not validate: %v", err)
	}
	if n := len(d.Spec.Template.Spec.Containers); n != 1 || kplat.Sidecarless(d) {
		t.Errorf("%d containers, sidecarless %v: want the app alone, injected", n, kplat.Sidecarless(d))
	}
	pod := injected(t, d)
	for _, c := range pod.Spec.Containers {
		if c.Name != config.QueueProxyContainer {
			continue
		}
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		if ports["http"] != 8012 || ports["admin"] != 9090 {
			t.Errorf("queue-proxy ports %v: want http 8012 and admin 9090 (the platform's defaults)", ports)
		}
		return
	}
	t.Error("no queue-proxy injected")
}

// TestRBACIsLeastPrivilege: no wildcard, no Secret but the webhook's own
// and the install's proxy secret (in Ebb's namespace, by name, the proxy
// secret read only; create cannot be named), the only
// ConfigMaps written are the learned state's (likewise), and the only
// writes on workloads are the scale subresource and the autoscaler's
// patches of pods (their annotations, and their requests through the
// resize subresource when parking).
func TestRBACIsLeastPrivilege(t *testing.T) {
	type named struct {
		role string
		rule rbacv1.PolicyRule
	}
	var rules []named
	for _, doc := range docs(t)["ClusterRole"] {
		cr := strict[rbacv1.ClusterRole](t, doc)
		for _, r := range cr.Rules {
			rules = append(rules, named{"ClusterRole " + cr.Name, r})
		}
	}
	for _, doc := range docs(t)["Role"] {
		r := strict[rbacv1.Role](t, doc)
		for _, rule := range r.Rules {
			rules = append(rules, named{"Role " + r.Namespace + "/" + r.Name, rule})
		}
	}
	write := []string{"create", "update", "patch", "delete", "deletecollection"}
	for _, n := range rules {
		r := n.rule
		all := strings.Join(append(append(append([]string{}, r.Verbs...), r.Resources...), r.APIGroups...), " ")
		if strings.Contains(all, "*") {
			t.Errorf("%s rule %+v: a wildcard", n.role, r)
		}
		for _, res := range r.Resources {
			writes := slices.ContainsFunc(r.Verbs, func(v string) bool { return slices.Contains(write, v) })
			switch {
			case res == "secrets" && !webhookSecretRule(n.role, r):
				t.Errorf("%s rule %+v: Ebb reads no Secret but ebb-system/ebb-webhook-certs and (read only) ebb-system/ebb-proxy-secret", n.role, r)
			case res == "mutatingwebhookconfigurations" && !slices.Equal(r.ResourceNames, []string{config.WebhookConfigName}):
				t.Errorf("%s rule %+v: Ebb touches only its own webhook configuration", n.role, r)
			case res == "configmaps" && writes && !learnedStateRule(n.role, r):
				t.Errorf("%s rule %+v: Ebb writes no ConfigMap but its learned state's, in ebb-system, by name", n.role, r)
			case res == "pods" && writes && podPatchRule(n.role, r):
			case res == "pods/resize" && !(n.role == "ClusterRole ebb-autoscaler" && slices.Equal(r.Verbs, []string{"patch"})):
				t.Errorf("%s rule %+v: only the autoscaler resizes pods (parking), and only by patch", n.role, r)
			case writes && (res == "deployments" || res == "pods" || res == "replicasets"):
				t.Errorf("%s rule %+v: Ebb writes only the scale of Deployments, and of pods only the autoscaler's patch of their "+
					"annotations (pod-deletion-cost, a parked pod's requests), never %s otherwise", n.role, r, res)
			case res == "leases" && !leaseRule(n.role, r, writes):
				t.Errorf("%s rule %+v: Leases are read by Ebb's Roles in ebb-system, and written by the autoscaler's alone", n.role, r)
			}
		}
	}
}

// TestLeasesHaveAPriorityLevel: the autoscaler's Lease calls reach a
// priority level of their own in the API server's Priority and Fairness
// (flowcontrol.yaml), as kube-controller-manager's leader election does,
// so that a wave of its writes (in the built-in service-accounts
// FlowSchema, precedence 9000, at workload-low) cannot make its renewals
// queue or be refused behind them. The FlowSchema names the service
// account whose Role writes the Leases, every verb that Role grants on
// them but watch (long-running, never queued), and is matched before
// service-accounts; the level lends none of its seats and queues.
func TestLeasesHaveAPriorityLevel(t *testing.T) {
	d := docs(t)
	if len(d["FlowSchema"]) != 1 || len(d["PriorityLevelConfiguration"]) != 1 {
		t.Fatalf("%d FlowSchemas and %d PriorityLevelConfigurations, want 1 each (flowcontrol.yaml)",
			len(d["FlowSchema"]), len(d["PriorityLevelConfiguration"]))
	}
	fs := strict[flowcontrolv1.FlowSchema](t, d["FlowSchema"][0])
	pl := strict[flowcontrolv1.PriorityLevelConfiguration](t, d["PriorityLevelConfiguration"][0])
	if fs.Spec.PriorityLevelConfiguration.Name != pl.Name {
		t.Errorf("FlowSchema %s sends to level %q, want %q", fs.Name, fs.Spec.PriorityLevelConfiguration.Name, pl.Name)
	}
	if p := fs.Spec.MatchingPrecedence; p <= 100 || p >= 9000 {
		t.Errorf("FlowSchema %s precedence %d: want it after system-leader-election (100) and before service-accounts (9000)", fs.Name, p)
	}
	var role *rbacv1.Role
	for _, doc := range d["Role"] {
		if r := strict[rbacv1.Role](t, doc); r.Name == "ebb-autoscaler" {
			role = r
		}
	}
	if role == nil {
		t.Fatal("no Role ebb-autoscaler in rbac.yaml")
	}
	var leaseVerbs []string
	for _, r := range role.Rules {
		if slices.Contains(r.Resources, "leases") {
			leaseVerbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "watch" })
		}
	}
	if len(fs.Spec.Rules) != 1 {
		t.Fatalf("FlowSchema %s: %d rules, want 1", fs.Name, len(fs.Spec.Rules))
	}
	rule := fs.Spec.Rules[0]
	want := flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount,
		ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: role.Name, Namespace: role.Namespace}}
	if len(rule.Subjects) != 1 || !cmp.Equal(rule.Subjects[0], want) || len(rule.NonResourceRules) != 0 {
		t.Errorf("FlowSchema %s subjects %+v: want the autoscaler's service account alone, %+v", fs.Name, rule.Subjects, want)
	}
	wantRule := flowcontrolv1.ResourcePolicyRule{Verbs: leaseVerbs, APIGroups: []string{"coordination.k8s.io"},
		Resources: []string{"leases"}, Namespaces: []string{flowcontrolv1.NamespaceEvery}}
	if len(rule.ResourceRules) != 1 || !cmp.Equal(rule.ResourceRules[0], wantRule) {
		t.Errorf("FlowSchema %s resource rules %+v: want %+v (the Role's Lease verbs but watch)", fs.Name, rule.ResourceRules, wantRule)
	}
	lim := pl.Spec.Limited
	if pl.Spec.Type != flowcontrolv1.PriorityLevelEnablementLimited || lim == nil || lim.NominalConcurrencyShares == nil ||
		*lim.NominalConcurrencyShares < 10 || lim.LendablePercent == nil || *lim.LendablePercent != 0 ||
		lim.LimitResponse.Type != flowcontrolv1.LimitResponseTypeQueue || lim.LimitResponse.Queuing == nil {
		t.Errorf("PriorityLevelConfiguration %s %+v: want a limited level of 10 shares at least, none lent, that queues", pl.Name, pl.Spec)
	}
}

// podPatchRule: the autoscaler's ClusterRole patches pods, for the
// annotations it sets on them (controller.kubernetes.io/pod-deletion-cost
// before a scale-down, a parked pod's requests): patch and reads, nothing
// that creates, updates or deletes a pod.
func podPatchRule(role string, r rbacv1.PolicyRule) bool {
	return role == "ClusterRole ebb-autoscaler" && slices.Equal(r.Verbs, []string{"get", "list", "watch", "patch"})
}

// webhookSecretRule: the autoscaler's Role creates Secrets, gets and
// updates the webhook's by name, and gets the install's proxy secret by
// name (it makes it when missing and never changes it).
func webhookSecretRule(role string, r rbacv1.PolicyRule) bool {
	if role != "Role ebb-system/ebb-autoscaler" {
		return false
	}
	return slices.Equal(r.Verbs, []string{"create"}) && len(r.ResourceNames) == 0 ||
		slices.Equal(r.Verbs, []string{"get", "update"}) && slices.Equal(r.ResourceNames, []string{config.WebhookSecretName}) ||
		slices.Equal(r.Verbs, []string{"get"}) && slices.Equal(r.ResourceNames, []string{stats.ProxySecretName})
}

// leaseRule: the Leases are Ebb's own namespace's, written by the
// autoscaler (its leader, buckets and replicas) and read by the
// activator (who holds each bucket).
func leaseRule(role string, r rbacv1.PolicyRule, writes bool) bool {
	switch role {
	case "Role ebb-system/ebb-autoscaler":
		return slices.Equal(r.Verbs, []string{"get", "list", "watch", "create", "update", "delete"})
	case "Role ebb-system/ebb-activator":
		return !writes && slices.Equal(r.Verbs, []string{"get", "list", "watch"})
	}
	return false
}

// learnedStateRule: a Role in ebb-system creates ConfigMaps, and gets and
// updates the learned state's shards by name.
func learnedStateRule(role string, r rbacv1.PolicyRule) bool {
	if !strings.HasPrefix(role, "Role ebb-system/") || !slices.Equal(r.Resources, []string{"configmaps"}) {
		return false
	}
	return slices.Equal(r.Verbs, []string{"create"}) && len(r.ResourceNames) == 0 ||
		slices.Equal(r.Verbs, []string{"get", "update"}) && slices.Equal(r.ResourceNames, learnedstore.Names())
}

// TestActivatorKnowsItself: the activator gets its name, namespace and
// address from the downward API (POD_IP gives its position among the
// ready activators).
func TestActivatorKnowsItself(t *testing.T) {
	var d *appsv1.Deployment
	for _, doc := range docs(t)["Deployment"] {
		if x := strict[appsv1.Deployment](t, doc); x.Name == config.ActivatorName {
			d = x
		}
	}
	if d == nil || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("Deployment ebb-activator %+v: want it, with one container", d)
	}
	env := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	want := map[string]string{config.EnvPodName: "metadata.name", config.EnvPodNamespace: "metadata.namespace", config.EnvPodIP: "status.podIP"}
	for name, path := range want {
		if env[name] != path {
			t.Errorf("env %s from %q, want the downward API's %s", name, env[name], path)
		}
	}
}

func deployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	for _, doc := range docs(t)["Deployment"] {
		if d := strict[appsv1.Deployment](t, doc); d.Name == name {
			return d
		}
	}
	t.Fatalf("no Deployment %s", name)
	return nil
}

// TestActivatorPresentsItsToken: the activator mounts a projected
// ServiceAccount token with the audience the autoscaler checks, at the
// path ACTIVATOR_STATS_TOKEN_FILE names, and reports to the autoscalers'
// stats port, which they publish on their Leases (no AUTOSCALER_URL: the
// activator routes each report to its bucket's holder).
func TestActivatorPresentsItsToken(t *testing.T) {
	act := deployment(t, config.ActivatorName).Spec.Template.Spec
	var file, url string
	for _, e := range act.Containers[0].Env {
		switch e.Name {
		case config.EnvStatsTokenFile:
			file = e.Value
		case config.EnvAutoscalerURL:
			url = e.Value
		}
	}
	var tokenPath string
	for _, v := range act.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if sa := src.ServiceAccountToken; sa != nil && sa.Audience == statsauth.DefaultStatsAudience {
				for _, m := range act.Containers[0].VolumeMounts {
					if m.Name == v.Name {
						tokenPath = m.MountPath + "/" + sa.Path
					}
				}
			}
		}
	}
	if tokenPath == "" || tokenPath != file {
		t.Errorf("projected token with audience %s mounted at %q, ACTIVATOR_STATS_TOKEN_FILE %q: want the same file",
			statsauth.DefaultStatsAudience, tokenPath, file)
	}
	as := deployment(t, config.AutoscalerName).Spec.Template.Spec.Containers[0]
	var statsPort int32
	for _, p := range as.Ports {
		if p.Name == config.PortNameStats {
			statsPort = p.ContainerPort
		}
	}
	if statsPort == 0 || url != "" || !slices.Contains(as.Args, "--stats=:"+strconv.Itoa(int(statsPort))) {
		t.Errorf("AUTOSCALER_URL %q, autoscaler stats port %d, args %v: want the autoscalers' --stats on their port named %s, "+
			"and no AUTOSCALER_URL", url, statsPort, as.Args, config.PortNameStats)
	}
}

// TestAutoscalerMayReviewTokens: the autoscaler's ClusterRole creates
// TokenReviews (and nothing else of authentication.k8s.io).
func TestAutoscalerMayReviewTokens(t *testing.T) {
	for _, doc := range docs(t)["ClusterRole"] {
		cr := strict[rbacv1.ClusterRole](t, doc)
		for _, r := range cr.Rules {
			if slices.Contains(r.APIGroups, "authentication.k8s.io") {
				if cr.Name != config.AutoscalerName || !slices.Equal(r.Resources, []string{"tokenreviews"}) || !slices.Equal(r.Verbs, []string{"create"}) {
					t.Errorf("ClusterRole %s rule %+v: only the autoscaler creates tokenreviews", cr.Name, r)
				}
				return
			}
		}
	}
	t.Error("no ClusterRole grants tokenreviews create: the autoscaler cannot check the activators' tokens")
}

// TestNetworkPolicyOpensStatsToActivatorsOnly: the autoscaler pods' stats
// port admits activator pods only; the admin port stays open.
func TestNetworkPolicyOpensStatsToActivatorsOnly(t *testing.T) {
	pols := docs(t)["NetworkPolicy"]
	if len(pols) != 1 {
		t.Fatalf("%d NetworkPolicies, want 1", len(pols))
	}
	np := strict[networkingv1.NetworkPolicy](t, pols[0])
	as, act := deployment(t, config.AutoscalerName), deployment(t, config.ActivatorName)
	if !maps.Equal(np.Spec.PodSelector.MatchLabels, as.Spec.Template.Labels) {
		t.Errorf("policy selects %v, autoscaler pods are %v", np.Spec.PodSelector.MatchLabels, as.Spec.Template.Labels)
	}
	open := map[int32][]string{} // port -> who may reach it ("*": anyone)
	for _, rule := range np.Spec.Ingress {
		who := []string{"*"}
		if len(rule.From) > 0 {
			who = nil
			for _, f := range rule.From {
				if f.PodSelector == nil || f.NamespaceSelector != nil || f.IPBlock != nil {
					t.Errorf("peer %+v: want activator pods of the namespace only", f)
					continue
				}
				if maps.Equal(f.PodSelector.MatchLabels, act.Spec.Template.Labels) {
					who = append(who, "activator")
				}
			}
		}
		for _, p := range rule.Ports {
			open[p.Port.IntVal] = append(open[p.Port.IntVal], who...)
		}
	}
	if diff := cmp.Diff(map[int32][]string{9093: {"activator"}, 9091: {"*"}, 8443: {"*"}}, open); diff != "" {
		t.Errorf("ingress (-want +got):\n%s", diff)
	}
}

// TestDisruptionBudgets: each of Ebb's Deployments has a PDB selecting
// its pods that keeps at least one of them through a drain.
func TestDisruptionBudgets(t *testing.T) {
	got := map[string]bool{}
	for _, doc := range docs(t)["PodDisruptionBudget"] {
		pdb := strict[policyv1.PodDisruptionBudget](t, doc)
		d := deployment(t, pdb.Name)
		if !maps.Equal(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) || pdb.Namespace != d.Namespace {
			t.Errorf("PDB %s selects %v in %s, its Deployment's pods are %v in %s", pdb.Name, pdb.Spec.Selector.MatchLabels,
				pdb.Namespace, d.Spec.Selector.MatchLabels, d.Namespace)
		}
		if mu := pdb.Spec.MaxUnavailable; mu == nil || mu.IntVal < 1 || mu.IntVal >= *d.Spec.Replicas {
			t.Errorf("PDB %s maxUnavailable %v with %d replicas: want at least one kept, and drains possible", pdb.Name, mu, *d.Spec.Replicas)
		}
		got[pdb.Name] = true
	}
	if !got[config.ActivatorName] || !got[config.AutoscalerName] {
		t.Errorf("PDBs for %v, want ebb-activator and ebb-autoscaler", got)
	}
}

// imageNames are the images `make images` builds (hack/images).
var imageNames = []string{"autoscaler", "activator", "queueproxy", "hello", "grpchello", "cpuwork", "pause"}

// TestImagesFollowOneSetting: every image of deploy/ (the containers', and
// the queue-proxy the webhook injects, QUEUE_PROXY_IMAGE) is one `make
// images` builds, named ebb.dev/NAME:dev, never latest; kustomize's images
// rewrite the env value too (../kustomizeconfig.yaml), so one setting
// moves them all.
func TestImagesFollowOneSetting(t *testing.T) {
	var seen []string
	check := func(where, image string) {
		seen = append(seen, image)
		name, tag, ok := strings.Cut(strings.TrimPrefix(image, "ebb.dev/"), ":")
		if !strings.HasPrefix(image, "ebb.dev/") || !ok || tag != "dev" || !slices.Contains(imageNames, name) {
			t.Errorf("%s: image %q: want ebb.dev/NAME:dev, NAME one of %v (make images)", where, image, imageNames)
		}
	}
	for _, doc := range docs(t)["Deployment"] {
		d := strict[appsv1.Deployment](t, doc)
		for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
			check(d.Name+"/"+c.Name, c.Image)
			for _, e := range c.Env {
				if e.Name == config.EnvQueueProxyImage {
					check(d.Name+"/"+c.Name+" "+e.Name, e.Value)
				}
			}
		}
	}
	if !slices.Contains(seen, "ebb.dev/queueproxy:dev") || !slices.Contains(seen, "ebb.dev/autoscaler:dev") ||
		!slices.Contains(seen, "ebb.dev/activator:dev") || !slices.Contains(seen, "ebb.dev/hello:dev") {
		t.Errorf("images %q: want the autoscaler's, the activator's, the injected queue-proxy's and the example's", seen)
	}
	data, err := os.ReadFile("../kustomizeconfig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var kc struct{ Images []struct{ Path, Kind string } }
	if err := yaml.UnmarshalStrict(data, &kc); err != nil {
		t.Fatal(err)
	}
	if len(kc.Images) != 1 || kc.Images[0].Path != "spec/template/spec/containers/env/value" || kc.Images[0].Kind != "Deployment" {
		t.Errorf("kustomizeconfig.yaml images %+v: want the Deployments' env values", kc.Images)
	}
	k, err := os.ReadFile("../kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var kust struct{ Configurations []string }
	if err := yaml.Unmarshal(k, &kust); err != nil || !slices.Equal(kust.Configurations, []string{"kustomizeconfig.yaml"}) {
		t.Errorf("kustomization configurations %q (%v): want [kustomizeconfig.yaml]", kust.Configurations, err)
	}
	files, _ := filepath.Glob("../*.yaml")
	more, _ := filepath.Glob("*.yaml")
	for _, f := range append(files, more...) {
		data, _ := os.ReadFile(f)
		if bytes.Contains(data, []byte(":latest")) {
			t.Errorf("%s names a :latest image", f)
		}
	}
}

// TestUpgradeRolls: a new image version rolls without a gap: each of
// Ebb's Deployments starts a new ready pod before it stops an old one
// (maxUnavailable 0), has a readiness probe, and the activator's grace
// period covers its shutdown delay (readiness fails, the endpoints drop
// it) and its drain.
func TestUpgradeRolls(t *testing.T) {
	for _, name := range []string{config.AutoscalerName, config.ActivatorName} {
		d := deployment(t, name)
		s := d.Spec.Strategy
		if s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate == nil ||
			s.RollingUpdate.MaxUnavailable == nil || s.RollingUpdate.MaxUnavailable.IntValue() != 0 ||
			s.RollingUpdate.MaxSurge == nil || s.RollingUpdate.MaxSurge.IntValue() < 1 {
			t.Errorf("%s strategy %+v: want RollingUpdate, maxUnavailable 0, maxSurge 1", name, s)
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
			t.Errorf("%s: %v replicas, want at least 2", name, d.Spec.Replicas)
		}
		if c := d.Spec.Template.Spec.Containers[0]; c.ReadinessProbe == nil {
			t.Errorf("%s has no readiness probe: a new pod would take traffic before it serves", name)
		}
	}
	act := deployment(t, config.ActivatorName)
	env := map[string]string{}
	for _, e := range act.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	delay, err := time.ParseDuration(env["ACTIVATOR_SHUTDOWN_DELAY"])
	if err != nil || delay < 5*time.Second {
		t.Errorf("ACTIVATOR_SHUTDOWN_DELAY %q: want at least 5s (two readiness periods and the endpoints' update)", env["ACTIVATOR_SHUTDOWN_DELAY"])
	}
	drain := activator.DefaultOptions().DrainTimeout // ACTIVATOR_DRAIN_TIMEOUT's default
	if v, ok := env["ACTIVATOR_DRAIN_TIMEOUT"]; ok {
		drain, _ = time.ParseDuration(v)
	}
	if grace := time.Duration(*act.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second; grace <= delay+drain {
		t.Errorf("activator grace period %v <= shutdown delay %v + drain %v", grace, delay, drain)
	}
}
