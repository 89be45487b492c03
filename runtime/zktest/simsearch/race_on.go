//go:build race

package simsearch

// raceDetector is true in a build with the race detector, which shuffles
// goroutines on purpose: a replay's history may then differ.
const raceDetector = true
