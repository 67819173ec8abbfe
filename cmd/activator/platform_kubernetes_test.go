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

func TestPodIP(t *testing.T) {
	for _, tc := range []struct{ name, env, flag, want string }{
		{"unset: unknown", "", "", ""},
		{"from the downward API", "10.1.0.2", "", "10.1.0.2"},
		{"IPv6", "fd00::2", "", "fd00::2"},
		{"the flag wins", "10.1.0.2", "10.1.0.3", "10.1.0.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--platform", "kubernetes"}
			if tc.flag != "" {
				args = append(args, "--pod-ip", tc.flag)
			}
			c, err := loadConfig(args, env(map[string]string{"POD_NAME": "act-0", "POD_IP": tc.env}))
			if err != nil {
				t.Fatal(err)
			}
			if c.Kube.PodIP != tc.want {
				t.Errorf("PodIP %q, want %q", c.Kube.PodIP, tc.want)
			}
		})
	}
}

func TestPlatformSettingErrors(t *testing.T) {
	_, err := loadConfig(nil, env(map[string]string{"ACTIVATOR_PLATFORM": "consul", "ACTIVATOR_QUEUE_SERVING_PORT": "0", "POD_IP": "act-0"}))
	for _, want := range []string{
		`environment variable "ACTIVATOR_PLATFORM" = "consul": must be file or kubernetes`,
		`environment variable "ACTIVATOR_QUEUE_SERVING_PORT" = "0": must be a whole number within [1, 65535]`,
		`environment variable "POD_IP" = "act-0": must be an IP address such as 10.0.0.1, or empty`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v: want it to contain %q", err, want)
		}
	}
}
