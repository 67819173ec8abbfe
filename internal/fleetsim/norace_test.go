//go:build !race

package fleetsim

const raceDetector = false
