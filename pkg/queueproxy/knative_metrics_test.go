package queueproxy

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
)

// TestKnativeNamesFromEnv: Knative's SERVING_* variables with Knative's
// meanings, Ebb's older SERVING_REVISION=namespace/name, and the errors.
func TestKnativeNamesFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tc := range []struct {
		name    string
		env     func(string) (string, bool)
		key     string
		names   string // namespace revision configuration service
		wantErr string
	}{
		{"knative", env("SERVING_NAMESPACE", "shop", "SERVING_REVISION", "cart-00002", "SERVING_CONFIGURATION", "cart", "SERVING_SERVICE", "cart"),
			"shop/cart-00002", "shop cart-00002 cart cart", ""},
		{"no parents", env("SERVING_NAMESPACE", "shop", "SERVING_REVISION", "cart"), "shop/cart", "shop cart cart unknown", ""},
		{"older form", env("SERVING_REVISION", "shop/cart"), "shop/cart", "shop cart cart unknown", ""},
		{"none", env(), "", "   ", ""},
		{"no namespace", env("SERVING_REVISION", "cart"), "", "", "SERVING_REVISION=\"cart\": needs SERVING_NAMESPACE"},
		{"two namespaces", env("SERVING_NAMESPACE", "a", "SERVING_REVISION", "b/cart"), "", "", "namespace/name naming the same namespace"},
	} {
		c, err := Load(nil, tc.env)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		n := c.Names
		if got := strings.Join([]string{n.Namespace, n.Revision, n.Configuration, n.Service}, " "); c.Revision != tc.key || got != tc.names {
			t.Errorf("%s: key %q, names %q; want %q, %q", tc.name, c.Revision, got, tc.key, tc.names)
		}
	}
}

// TestKnativeRevisionMetrics: Knative's queue-proxy series, labelled with
// the revision's Knative names and the pod: every request by its code,
// those the app answered, and the queue depth under a limit; Ebb's own
// series name the revision with two labels.
func TestKnativeRevisionMetrics(t *testing.T) {
	c := testConfig(t, func(c *Config) {
		c.ContainerConcurrency = 4
		c.Names.Namespace, c.Names.Revision, c.Names.Service = "default", "hello-00001", "hello"
		if err := c.resolveNames(); err != nil {
			t.Fatal(err)
		}
	})
	r := newRig(t, c, startApp(t, func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == "/missing" {
			ctx.SetStatusCode(fasthttp.StatusNotFound)
		}
	}))
	r.do(t, nil)
	r.do(t, nil)
	r.do(t, func(req *fasthttp.Request) { req.URI().SetPath("/missing") })
	reg := r.q.proxy.metrics.reg
	const labels = `configuration_name="hello-00001",container_name="queue-proxy",namespace_name="default",pod_name="test-pod"`
	const rev = `revision_name="hello-00001",service_name="hello"`
	want := ""
	for _, name := range []string{"revision_app_request_count", "revision_request_count"} {
		what := "Requests received by the queue-proxy"
		if name == "revision_app_request_count" {
			what = "Requests answered by the app"
		}
		want += `# HELP ` + name + ` ` + what + `, by response code (Knative's).
# TYPE ` + name + ` counter
` + name + `{` + labels + `,response_code="200",response_code_class="2xx",` + rev + `} 2
` + name + `{` + labels + `,response_code="404",response_code_class="4xx",` + rev + `} 1
`
	}
	want += `# HELP revision_queue_depth Requests in the breaker: in flight to the app and waiting for a slot (Knative's).
# TYPE revision_queue_depth gauge
revision_queue_depth{` + labels + `,` + rev + `} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "revision_request_count", "revision_app_request_count",
		"revision_queue_depth"); err != nil {
		t.Error(err)
	}
	for name, n := range map[string]int{"revision_request_latencies": 2, "revision_app_request_latencies": 2} {
		if got, err := testutil.GatherAndCount(reg, name); err != nil || got != n {
			t.Errorf("%s: %d series, want %d (%v)", name, got, n, err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "ebb_queue_requests_total" {
			continue
		}
		got := map[string]string{}
		for _, l := range mf.GetMetric()[0].GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if got["namespace"] != "default" || got["revision"] != "hello-00001" {
			t.Errorf("ebb_queue_requests_total labels %v, want namespace default and revision hello-00001", got)
		}
	}
}
