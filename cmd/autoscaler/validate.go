package main

import "fmt"

func runValidate(args []string, s streams) int {
	fmt.Fprintln(s.err, "autoscaler validate: under construction")
	return 2
}
