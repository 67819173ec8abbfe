package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/autoscaler/fleetapi"
	"ebb.dev/ebb/pkg/config"
	kubecluster "ebb.dev/ebb/pkg/platform/kubernetes/cluster"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// defaultServer is where `autoscaler run` serves its API by default.
var defaultServer = "http://127.0.0.1:" + strconv.Itoa(config.AutoscalerAdminPort)

const statusUsage = `usage: autoscaler status [--server URL | --kube [--kubeconfig FILE] [--context NAME]] [-o table|json|yaml]
       autoscaler explain [same flags] [--limit N] NAMESPACE/NAME

status prints every revision's current state; explain prints one revision's
state and its last decisions with their reasons. Both ask a running
autoscaler (autoscaler run): at --server over HTTP, or, with --kube (implied
by --kubeconfig, --context or $KUBECONFIG), on the cluster kubectl would
use (the kubeconfig files of $KUBECONFIG, else ~/.kube/config, its current
context or --context) through the API server's proxy to the Service
ebb-autoscaler, so no port-forward is needed.

Flags:
`

func runStatus(args []string, s streams) int {
	fs, c := clientFlags("status", s)
	if err := fs.Parse(flagsFirst(fs, args)); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	get, err := c.getter(fs)
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler status: %v\n", err)
		return 2
	}
	var list []autoscaler.Status
	h, err := get("/revisions", &list)
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler status: %v\n", err)
		return 1
	}
	if missing := h.Get(fleetapi.PartialHeader); missing != "" {
		fmt.Fprintf(s.err, "autoscaler status: the revisions of autoscaler replicas that did not answer are missing: %s\n", missing)
	}
	if list == nil {
		list = []autoscaler.Status{}
	}
	if done, err := c.printStructured(s.out, list); done {
		return exitOf(s, "status", err)
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tSTATE\tREADY\tDESIRED\tRECOMMENDED\tPANIC\tEBC\tACTIVATOR\tSTABLE\tTARGET\tLAST DECISION\tCONDITIONS")
	for _, st := range list {
		state := st.State
		if st.Resting { // its last decision stands: LAST DECISION is when it went to rest
			state += " (resting)"
		}
		if f := st.StartFailure; f != nil { // explain shows its message
			state += " (pods failing: " + f.Reason + ")"
		}
		if pk := st.Parking; pk != nil && pk.State != autoscaler.ParkStateParked { // explain shows its message
			state += " (parking " + pk.State + parkReason(pk) + ")"
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%d\t%d\t%d\t%v\t%d\t%s\t%s\t%.2f %s\t%s\t%s\n",
			st.Namespace, st.Name, state, st.Ready, st.Desired, st.Recommended, st.Panic, st.EBC,
			inPath(st.ActivatorInPath), fixed(st.Stable, 2), st.Target, st.Metric, ago(st.Time), conditionsText(st.Conditions))
	}
	tw.Flush()
	return 0
}

func runExplain(args []string, s streams) int {
	fs, c := clientFlags("explain", s)
	if err := fs.Parse(flagsFirst(fs, args)); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	key, err := autoscaler.ParseRevisionKey(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler explain: %v\n", err)
		return 2
	}
	get, err := c.getter(fs)
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler explain: %v\n", err)
		return 2
	}
	var resp autoscaler.DecisionsResponse
	u := "/revisions/" + url.PathEscape(key.Namespace) + "/" + url.PathEscape(key.Name) + "/decisions?limit=" + strconv.Itoa(c.limit)
	if _, err := get(u, &resp); err != nil {
		fmt.Fprintf(s.err, "autoscaler explain: %v\n", err)
		return 1
	}
	if done, err := c.printStructured(s.out, resp); done {
		return exitOf(s, "explain", err)
	}
	printExplain(s.out, resp)
	return 0
}

// exitOf is the exit code of a structured print.
func exitOf(s streams, cmd string, err error) int {
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

func printExplain(w io.Writer, resp autoscaler.DecisionsResponse) {
	st := resp.Status
	unit := " per pod"
	if len(st.Conditions) > 0 { // the HPA class: its first metric's target, a utilization or a per-pod value
		unit = ""
	}
	fmt.Fprintf(w, "%s/%s (%s, %s, target %.2f%s)\n", st.Namespace, st.Name, st.Class, st.Metric, st.Target, unit)
	fmt.Fprintf(w, "  now: %s, %d ready, desired %d, recommended %d, panic %v, excess burst capacity %d, activator %s\n\n",
		st.State, st.Ready, st.Desired, st.Recommended, st.Panic, st.EBC, inPath(st.ActivatorInPath))
	if f := st.StartFailure; f != nil {
		where := ""
		if f.Pod != "" {
			where = " in pod " + f.Pod
			if f.Container != "" {
				where += ", container " + f.Container
			}
		}
		fmt.Fprintf(w, "  %s: %s (%s)%s: %s\n\n", f.Summary(), f.Reason, f.Cause, where, f.Message)
	}
	if pk := st.Parking; pk != nil {
		fmt.Fprintf(w, "  parking: %s%s: %s\n\n", pk.State, parkReason(pk), pk.Message)
	}
	for _, c := range st.Conditions {
		fmt.Fprintf(w, "  %-15s %-5s %-24s %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	if len(st.Conditions) > 0 {
		fmt.Fprintln(w)
	}
	for _, d := range resp.Decisions {
		fmt.Fprintf(w, "%s  desired %d (recommended %d, ready %d, stable %s, panic avg %s)%s\n",
			d.Time.Format("15:04:05"), d.Desired, d.Recommended, d.Ready, fixed(d.Stable, 3), fixed(d.PanicAverage, 3), panicMark(d.Panic))
		for _, r := range d.Reasons {
			fmt.Fprintf(w, "    %-24s %s\n", r.Code, r.Message)
		}
	}
}

// client are the flags of status and explain: where the autoscaler is,
// and how to print its answer.
type client struct {
	server                         string
	kube                           bool
	kubeconfig, kubeContext, ebbNS string
	output                         string
	limit                          int
}

func clientFlags(name string, s streams) (*flag.FlagSet, *client) {
	c := &client{}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(s.err)
	fs.StringVar(&c.server, "server", defaultServer, "the autoscaler's API address")
	fs.BoolVar(&c.kube, "kube", false, "ask the autoscaler on the cluster of the kubeconfig (implied by --kubeconfig, --context, $KUBECONFIG)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig file (default as kubectl: $KUBECONFIG's files, else ~/.kube/config)")
	fs.StringVar(&c.kubeContext, "context", "", "the kubeconfig context (default its current context)")
	fs.StringVar(&c.ebbNS, "ebb-namespace", config.SystemNamespace, "Ebb's namespace on the cluster (the Service "+config.AutoscalerName+")")
	fs.StringVar(&c.output, "o", "table", "output format: table, json or yaml (also --output)")
	fs.StringVar(&c.output, "output", "table", "output format: table, json or yaml")
	fs.IntVar(&c.limit, "limit", 10, "how many decisions to show (explain)")
	fs.Usage = func() { fmt.Fprint(s.err, statusUsage); fs.PrintDefaults() }
	return fs, c
}

// getter returns the function that asks the autoscaler for a path of its
// API: over HTTP at --server, or through the API server's service proxy
// when the cluster was asked for (and --server was not given).
func (c *client) getter(fs *flag.FlagSet) (func(path string, v any) (http.Header, error), error) {
	switch c.output {
	case "table", "json", "yaml":
	default:
		return nil, fmt.Errorf("-o %q: must be table, json or yaml", c.output)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cluster := c.kube || set["kubeconfig"] || set["context"] || os.Getenv("KUBECONFIG") != ""
	if set["server"] || !cluster {
		if set["server"] && (c.kube || set["kubeconfig"] || set["context"]) {
			return nil, errors.New("--server and --kube (or --kubeconfig, --context) name two places: give one")
		}
		return func(path string, v any) (http.Header, error) { return getJSONHeader(c.server+path, v) }, nil
	}
	cfg, err := kubecluster.RESTConfigFor(c.kubeconfig, c.kubeContext, "ebb-autoscaler-cli")
	if err != nil {
		return nil, err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	hc.Timeout = 10 * time.Second
	base := strings.TrimSuffix(cfg.Host, "/") + "/api/v1/namespaces/" + url.PathEscape(c.ebbNS) + "/services/" +
		config.AutoscalerName + ":" + config.PortNameHTTP + "/proxy"
	return func(path string, v any) (http.Header, error) {
		h, err := getJSONWith(hc, base+path, v)
		if err != nil {
			return nil, fmt.Errorf("through the API server %s (Service %s/%s): %w", cfg.Host, c.ebbNS, config.AutoscalerName, err)
		}
		return h, nil
	}, nil
}

// printStructured prints v as JSON or YAML when -o asks for it; done is
// false for the table.
func (c *client) printStructured(w io.Writer, v any) (done bool, err error) {
	switch c.output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return true, enc.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = w.Write(b)
		return true, err
	}
	return false, nil
}

func getJSON(u string, v any) error {
	_, err := getJSONHeader(u, v)
	return err
}

// getJSONHeader is getJSON that also returns the answer's header.
func getJSONHeader(u string, v any) (http.Header, error) {
	return getJSONWith(&http.Client{Timeout: 5 * time.Second}, u, v)
}

// getJSONWith is getJSONHeader with the client given.
func getJSONWith(c *http.Client, u string, v any) (http.Header, error) {
	resp, err := c.Get(u)
	if err != nil {
		return nil, fmt.Errorf("asking the autoscaler: %w (is `autoscaler run` running? set --server)", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return nil, fmt.Errorf("reading the autoscaler's answer: %w", err)
	}
	return resp.Header, nil
}

// fixed formats f with prec decimals; a value that rounds to zero prints
// without a sign ("0.000", not "-0.000").
func fixed(f float64, prec int) string {
	s := strconv.FormatFloat(f, 'f', prec, 64)
	if strings.Trim(s, "-0.") == "" {
		return s[strings.IndexByte(s, '0'):]
	}
	return s
}

func inPath(b bool) string {
	if b {
		return "in path"
	}
	return "out of path"
}

func panicMark(b bool) string {
	if b {
		return "  PANIC"
	}
	return ""
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return time.Since(t).Truncate(time.Second).String() + " ago"
}

// conditionsText is the HPA conditions that say something in a table
// cell: those off their usual value (AbleToScale ReadyForNewScale,
// ScalingActive ValidMetricFound, ScalingLimited DesiredWithinRange), or
// "ok" when none is; "-" for other classes.
func conditionsText(cs []decider.Condition) string {
	if len(cs) == 0 {
		return "-"
	}
	var parts []string
	for _, c := range cs {
		switch c.Reason {
		case "ReadyForNewScale", "ValidMetricFound", "DesiredWithinRange":
		default:
			parts = append(parts, c.Type+"="+c.Reason)
		}
	}
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, ",")
}

// parkReason is a parking status's reason in brackets, when it has one.
func parkReason(pk *autoscaler.ParkStatus) string {
	if pk.Reason == "" {
		return ""
	}
	return " (" + pk.Reason + ")"
}
