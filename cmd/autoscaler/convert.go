package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"ebb.dev/ebb/pkg/manifest/convert"
)

// Exit statuses of convert.
const (
	exitConverted   = 0
	exitUnconverted = 1 // something cannot be converted; nothing is written
	// exitUnreadable (2): a file cannot be read or parsed, or bad flags.
)

const convertUsage = `usage: autoscaler convert [--sidecar] -f FILE|DIR [-f FILE|DIR ...]

Converts Knative Services and Configurations, and Kubernetes autoscaling/v2
and autoscaling/v1 HorizontalPodAutoscalers with the Deployments they
target, into what Ebb runs on a cluster: Deployments opted in with the
label autoscaling.ebb.dev/enabled: "true" whose pod templates carry the
equivalent annotations. Other objects (the config-autoscaler ConfigMap,
Services, Deployments no HPA targets) are written unchanged. The YAML goes
to standard output; warnings go to standard error.

The default (short) form relies on Ebb's queue-proxy injection webhook:
the label on the Deployment and on a Knative revision's pod template (the
webhook selects pods by it), the annotations, and the app's container as
written, with Knative's timeouts as REVISION_*_TIMEOUT_SECONDS in its
environment. --sidecar applies the webhook's injection to each Knative
revision's pod template instead (the long form, for clusters without the
webhook). A Deployment converted from an HPA gets the label on the
Deployment only: it runs without a queue-proxy.

A DIR is read for its *.yaml, *.yml and *.json files; - is standard input.

Exit status: 0 converted, 1 something cannot be converted (each error names
the object, the field and the fix; nothing is written), 2 a file cannot be
read or parsed.

Flags:
`

type convertOptions struct {
	files   fileList
	options convert.Options
}

func runConvert(args []string, s streams) int {
	opts, err := parseConvertFlags(args, s.err)
	if errors.Is(err, flag.ErrHelp) {
		return exitConverted
	}
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler convert: %v\n", err)
		return exitUnreadable
	}
	set, err := readManifests(opts.files, s.in)
	if err != nil {
		printLines(s.err, "autoscaler convert: ", err)
		return exitUnreadable
	}
	res, err := convert.Convert(set, opts.options)
	if err != nil {
		printLines(s.err, "autoscaler convert: ", err)
		return exitUnconverted
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(s.err, "autoscaler convert: warning: %s\n", w)
	}
	w := bufio.NewWriter(s.out)
	err = res.WriteYAML(w)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler convert: writing the output: %v\n", err)
		return exitUnreadable
	}
	return exitConverted
}

func printLines(w io.Writer, prefix string, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(w, "%s%s\n", prefix, line)
	}
}

func parseConvertFlags(args []string, errOut io.Writer) (convertOptions, error) {
	var opts convertOptions
	fs := flag.NewFlagSet("convert", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Var(&opts.files, "f", "a manifest file or directory to read (repeatable; - for stdin)")
	fs.BoolVar(&opts.options.Sidecar, "sidecar", false,
		"apply the webhook's injection to each Knative revision's pod template (the long form, for clusters without the webhook)")
	fs.StringVar(&opts.options.QueueProxyImage, "queue-proxy-image", convert.DefaultQueueProxyImage, "the queue-proxy's image (with --sidecar)")
	fs.Usage = func() {
		fmt.Fprint(errOut, convertUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	return opts, checkManifestArgs(fs, opts.files)
}
