package main

import "fmt"

func runSimulate(args []string, s streams) int {
	fmt.Fprintln(s.err, "autoscaler simulate: under construction")
	return 2
}
