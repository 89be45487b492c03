//go:build !race

package simsearch

// raceDetector: see race_on_test.go.
const raceDetector = false
