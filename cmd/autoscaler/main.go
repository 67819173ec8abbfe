// Command autoscaler is Ebb's autoscaler. Its subcommands:
//
//	autoscaler simulate [--explain] SCENARIO   replay a scenario through the decider
//	autoscaler validate [--output json] -f FILE...  validate manifests as a cluster would
//	autoscaler convert [--sidecar] -f FILE...       Knative Services and HPAs to Ebb's Deployments
//	autoscaler whatif --invocations F --durations F  Ebb in a closed loop on a trace's arrivals
//	autoscaler tune --invocations F --durations F    search scale-to-zero settings with whatif
//
// main only wires: each subcommand is a function from arguments and streams
// to an exit status.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// streams are the standard streams a subcommand may use.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

const usage = `usage: autoscaler COMMAND [ARGS]

Commands:
  run [--manifests DIR]             run Ebb on this machine: autoscaler, activator
                                    and the revisions as local processes
  simulate [--explain] SCENARIO     replay a scenario file (JSON or YAML, - for stdin)
                                    through the decider; one JSON line per decision
  validate [--output json] -f FILE  validate a config-autoscaler ConfigMap and
                                    Deployments as a cluster would
  convert [--sidecar] -f FILE       Knative Services, and HPAs with their Deployments,
                                    into Ebb's opted-in Deployments (YAML on stdout)
  whatif --invocations F --durations F [-f FILE]
                                    Ebb in a closed loop on a trace's arrivals:
                                    cold starts and idle replica-seconds
  tune --invocations F --durations F [--max-cold-start-share S]
                                    search scale-to-zero settings with whatif:
                                    the Pareto front and annotations to paste
  status [--server URL]             every revision's state, from a running autoscaler
  explain [--server URL] NS/NAME    one revision's last decisions and their reasons

Run "autoscaler COMMAND -h" for a command's flags.
`

func run(args []string, in io.Reader, out, errOut io.Writer) int {
	s := streams{in: in, out: out, err: errOut}
	if len(args) == 0 {
		fmt.Fprint(errOut, usage)
		return 2
	}
	switch args[0] {
	case "simulate":
		return runSimulate(args[1:], s)
	case "validate":
		return runValidate(args[1:], s)
	case "convert":
		return runConvert(args[1:], s)
	case "whatif":
		return runWhatif(args[1:], s)
	case "tune":
		return runTune(args[1:], s)
	case "run":
		return runRun(args[1:], s)
	case "status":
		return runStatus(args[1:], s)
	case "explain":
		return runExplain(args[1:], s)
	case "-h", "--help", "help":
		fmt.Fprint(out, usage)
		return 0
	default:
		fmt.Fprintf(errOut, "autoscaler: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
