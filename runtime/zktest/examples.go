package zktest

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

// ExamplesNeedServer is for TestMain in a package whose examples use the
// server that TestMain started with StartProcess (err is what StartProcess
// returned). Examples have no testing.TB to skip with, so it treats them as
// Shared treats tests: when err says ZooKeeper is not installed and CI is
// not set, or when the tests run with -short, it makes m.Run skip every
// example (by adding ^Example to -test.skip) and says why on stderr.
// Otherwise it does nothing, and an example that finds no server fails.
// It parses the command line if TestMain has not.
//
// A -skip pattern of the caller's own that contains "/" cannot be combined
// with ^Example: the examples then run (and fail without a server).
func ExamplesNeedServer(err error) {
	if !flag.Parsed() {
		flag.Parse()
	}
	reason := ""
	switch {
	case testing.Short():
		reason = "-short"
	case errors.Is(err, ErrNotInstalled) && !InCI():
		reason = err.Error()
	default:
		return
	}
	if skipExamples() {
		fmt.Fprintf(os.Stderr, "zktest: skipping the examples, which need ZooKeeper: %s\n", reason)
	}
}

// skipExamples adds ^Example to -test.skip and reports whether it could.
func skipExamples() bool {
	f := flag.Lookup("test.skip")
	if f == nil {
		return false
	}
	pattern := "^Example"
	switch old := f.Value.String(); {
	case old == "":
	case strings.Contains(old, "/"):
		return false
	default:
		pattern += "|" + old
	}
	return f.Value.Set(pattern) == nil
}
