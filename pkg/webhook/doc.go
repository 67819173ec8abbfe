package webhook
