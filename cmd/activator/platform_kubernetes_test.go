package main

import (
	"strings"
	"testing"
)

func TestKubernetesPlatformNeedsNoRevisionsFile(t *testing.T) {
	c, err := loadConfig([]string{"--platform", "kubernetes", "--namespace", "ebb"}, env(map[string]string{"POD_NAME": "act-0"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Platform != platformKubernetes || c.Kube.Namespace != "ebb" || c.Kube.ActivatorService != "ebb-activator" || c.Kube.QueueServingPort != 8012 {
		t.Errorf("config %+v: want the kubernetes platform in namespace ebb with the default service and port", c)
	}
}

func TestPlatformSettingErrors(t *testing.T) {
	_, err := loadConfig(nil, env(map[string]string{"ACTIVATOR_PLATFORM": "consul", "ACTIVATOR_QUEUE_SERVING_PORT": "0"}))
	for _, want := range []string{
		`ACTIVATOR_PLATFORM (ACTIVATOR_PLATFORM) = "consul": must be file or kubernetes`,
		`ACTIVATOR_QUEUE_SERVING_PORT (ACTIVATOR_QUEUE_SERVING_PORT) = "0": must be a whole number within [1, 65535]`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v: want it to contain %q", err, want)
		}
	}
}
