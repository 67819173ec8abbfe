package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/stats"
)

// proxySecretPoll is how often ACTIVATOR_PROXY_SECRET_FILE is read again:
// the kubelet updates a mounted Secret within about a minute of a change.
const proxySecretPoll = 30 * time.Second

// readProxySecret reads the install's proxy secret from path: the file's
// content without surrounding white space, a valid secret.
func readProxySecret(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s_FILE: %w", stats.ProxySecretEnv, err)
	}
	s := strings.TrimSpace(string(data))
	if err := stats.ValidateProxySecret(s); err != nil {
		return "", fmt.Errorf("%s_FILE %s: %w", stats.ProxySecretEnv, path, err)
	}
	if s == "" {
		return "", fmt.Errorf("%s_FILE %s: the file is empty: it must hold the install's proxy secret", stats.ProxySecretEnv, path)
	}
	return s, nil
}

// loadProxySecretFile puts the file's secret into the options, refusing a
// secret given both ways.
func loadProxySecretFile(cfg *config) error {
	if cfg.ProxySecretFile == "" {
		return nil
	}
	if cfg.Activator.ProxySecret != "" {
		return errors.New(stats.ProxySecretEnv + " and " + stats.ProxySecretEnv + "_FILE are both set: give the secret one way")
	}
	s, err := readProxySecret(cfg.ProxySecretFile)
	if err != nil {
		return err
	}
	cfg.Activator.ProxySecret = s
	return nil
}

// followProxySecret reads the file every period until ctx ends and gives a
// changed secret to set (the activator's SetProxySecret); a file that cannot be read, or holds
// an invalid secret, is logged and the current secret stays.
func followProxySecret(ctx context.Context, path string, period time.Duration, set func(string) error, log *zap.Logger) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s, err := readProxySecret(path)
		if err == nil {
			err = set(s)
		}
		if err != nil {
			log.Warn("the proxy secret file cannot be used; the current secret stays", zap.Error(err))
		}
	}
}
