//go:build !race

package simsearch

// raceDetector: see race_on.go.
const raceDetector = false
