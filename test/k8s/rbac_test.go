//go:build k8s

package k8s

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"ebb.dev/ebb/pkg/config"
)

// TestRBAC: Ebb's ServiceAccounts, as deploy/ binds them, may do what Ebb
// does and nothing it does not. (Every other test runs Ebb under these
// accounts, so what they may do is proven there; this test lists what
// they may not.)
func TestRBAC(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "rbac")
	d := appDeployment(t, ns, "victim", nil)
	createApp(t, d)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns}, StringData: map[string]string{"k": "v"}}
	if _, err := env.client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	as := impersonate(t, config.AutoscalerName)
	act := impersonate(t, config.ActivatorName)

	for _, tc := range []struct {
		name    string
		allowed bool
		call    func() error
	}{
		{"autoscaler reads a Deployment's scale", true, func() error {
			_, err := as.AppsV1().Deployments(ns).GetScale(ctx, "victim", metav1.GetOptions{})
			return err
		}},
		{"autoscaler deletes a Deployment", false, func() error {
			return as.AppsV1().Deployments(ns).Delete(ctx, "victim", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}},
		{"autoscaler updates a Deployment (not its scale)", false, func() error {
			cur, err := env.client.AppsV1().Deployments(ns).Get(ctx, "victim", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.Template.Spec.Containers[0].Image = "evil"
			_, err = as.AppsV1().Deployments(ns).Update(ctx, cur, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"autoscaler creates a Deployment", false, func() error {
			_, err := as.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: d.Spec},
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"autoscaler reads a Secret", false, func() error {
			_, err := as.CoreV1().Secrets(ns).Get(ctx, "s", metav1.GetOptions{})
			return err
		}},
		{"autoscaler lists Secrets", false, func() error {
			_, err := as.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
			return err
		}},
		{"autoscaler creates a Pod", false, func() error {
			_, err := as.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: d.Spec.Template.Spec},
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"autoscaler deletes a Pod", false, func() error {
			return as.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}, metav1.ListOptions{})
		}},
		{"autoscaler writes config-autoscaler", false, func() error {
			cm, err := env.client.CoreV1().ConfigMaps(ebbNS).Get(ctx, configName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			_, err = as.CoreV1().ConfigMaps(ebbNS).Update(ctx, cm, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"autoscaler creates a learned-state ConfigMap in Ebb's namespace", true, func() error {
			_, err := as.CoreV1().ConfigMaps(ebbNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: config.LearnedStatePrefix + "0"}},
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if apierrors.IsAlreadyExists(err) {
				return nil // the leader saved state already: create was allowed
			}
			return err
		}},
		{"autoscaler creates a ConfigMap in a revision's namespace", false, func() error {
			_, err := as.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}},
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"autoscaler reads another ConfigMap", false, func() error {
			_, err := as.CoreV1().ConfigMaps(ebbNS).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return err
		}},
		{"autoscaler takes a Lease outside Ebb's namespace", false, func() error {
			_, err := as.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
			return err
		}},
		{"autoscaler grants itself a role", false, func() error {
			_, err := as.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "x"},
				RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"}},
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"autoscaler deletes a Namespace", false, func() error {
			return as.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}},
		{"activator scales a Deployment", false, func() error {
			_, err := act.AppsV1().Deployments(ns).UpdateScale(ctx, "victim", &autoscalingv1.Scale{
				ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}},
				metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"activator creates a Service", false, func() error {
			_, err := act.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "x"},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"activator reads EndpointSlices outside Ebb's namespace", false, func() error {
			_, err := act.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
		{"activator writes a Lease", false, func() error {
			_, err := act.CoordinationV1().Leases(ebbNS).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x"}},
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"activator reads a Secret", false, func() error {
			_, err := act.CoreV1().Secrets(ns).Get(ctx, "s", metav1.GetOptions{})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			switch {
			case tc.allowed && err != nil:
				t.Errorf("refused: %v", err)
			case !tc.allowed && !apierrors.IsForbidden(err):
				t.Errorf("got %v, want Forbidden", err)
			}
		})
	}
}

// impersonate is a client acting as one of Ebb's ServiceAccounts.
func impersonate(t *testing.T, sa string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(env.rest)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ebbNS + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ebbNS, "system:authenticated"}}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
