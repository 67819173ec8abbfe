package prometheus

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/manifest/inject"
)

// scrapeConfig is the part of prometheus.yml this test reads.
type scrapeConfig struct {
	RuleFiles     []string `json:"rule_files"`
	ScrapeConfigs []struct {
		JobName string `json:"job_name"`
		SD      []struct {
			Role       string `json:"role"`
			Namespaces struct {
				Names []string `json:"names"`
			} `json:"namespaces"`
		} `json:"kubernetes_sd_configs"`
		Relabel []struct {
			SourceLabels []string `json:"source_labels"`
			Action       string   `json:"action"`
			Regex        string   `json:"regex"`
			TargetLabel  string   `json:"target_label"`
		} `json:"relabel_configs"`
	} `json:"scrape_configs"`
}

// TestScrapeConfigFindsEbb: prometheus.yml's jobs select what the
// manifests advertise (Debian's promtool, without Kubernetes discovery,
// cannot load it; TestPrometheusScrapesEbb scrapes the same targets on the
// testbed): the autoscaler's and the activator's pods by their
// prometheus.io annotations, on a port their container declares, and
// every queue-proxy by its container's and admin port's names, as the
// webhook injects them; the rules file is loaded.
func TestScrapeConfigFindsEbb(t *testing.T) {
	data, err := os.ReadFile("prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c scrapeConfig
	if err := yaml.Unmarshal(data, &c); err != nil { // the fields this test knows
		t.Fatal(err)
	}
	if len(c.RuleFiles) != 1 || c.RuleFiles[0] != "knative-otel-rules.yaml" {
		t.Errorf("rule_files %v, want knative-otel-rules.yaml (beside prometheus.yml)", c.RuleFiles)
	}
	keep := map[string]*regexp.Regexp{}
	for _, sc := range c.ScrapeConfigs {
		if len(sc.SD) != 1 || sc.SD[0].Role != "pod" {
			t.Errorf("job %s: want one kubernetes_sd_config of role pod", sc.JobName)
		}
		for _, r := range sc.Relabel {
			if r.TargetLabel == "namespace" || r.TargetLabel == "pod" || r.TargetLabel == "revision" {
				t.Errorf("job %s: target label %q would rename Ebb's own label of that name to exported_%s", sc.JobName, r.TargetLabel, r.TargetLabel)
			}
			if r.Action == "keep" {
				keep[sc.JobName] = regexp.MustCompile("^(?:" + r.Regex + ")$")
			}
		}
		if sc.JobName == "ebb" && (len(sc.SD) != 1 || len(sc.SD[0].Namespaces.Names) != 1 || sc.SD[0].Namespaces.Names[0] != config.SystemNamespace) {
			t.Errorf("job ebb: want the pods of %s", config.SystemNamespace)
		}
	}
	if keep["ebb"] == nil || keep["ebb-queue-proxy"] == nil {
		t.Fatalf("want the jobs ebb and ebb-queue-proxy, each with a keep rule; got %v", keep)
	}

	for _, file := range []string{"autoscaler.yaml", "activator.yaml"} {
		d := deployment(t, filepath.Join("..", "kubernetes", file))
		ann := d.Spec.Template.Annotations
		if !keep["ebb"].MatchString(ann["prometheus.io/scrape"]) || ann["prometheus.io/path"] != "/metrics" {
			t.Errorf("%s: pod annotations %v, want prometheus.io/scrape true and path /metrics", file, ann)
		}
		port, err := strconv.Atoi(ann["prometheus.io/port"])
		declared := false
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, p := range c.Ports {
				declared = declared || int(p.ContainerPort) == port
			}
		}
		if err != nil || !declared {
			t.Errorf("%s: prometheus.io/port %q is not a port its container declares", file, ann["prometheus.io/port"])
		}
	}
	if !keep["ebb-queue-proxy"].MatchString(config.QueueProxyContainer + ";" + inject.AdminPortName) {
		t.Errorf("job ebb-queue-proxy keeps %v, which does not select the container %s's port %s", keep["ebb-queue-proxy"],
			config.QueueProxyContainer, inject.AdminPortName)
	}
	if keep["ebb-queue-proxy"].MatchString(config.QueueProxyContainer + ";http") {
		t.Errorf("job ebb-queue-proxy also selects the queue-proxy's serving port")
	}
}

// deployment reads the Deployment of a manifest file (the first document
// of that kind).
func deployment(t *testing.T, path string) *appsv1.Deployment {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err == nil && d.Kind == "Deployment" {
			return &d
		}
	}
	t.Fatalf("%s: no Deployment", path)
	return nil
}
