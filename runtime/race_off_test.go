//go:build !race

package runtime_test

// raceDetector is true in a build with the race detector, which shuffles
// the order goroutines run in on purpose.
const raceDetector = false
