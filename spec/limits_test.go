package spec_test

import (
	"testing"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// The spec refuses what the runtime would refuse at run time, and no less.
func TestMaxPartitionsIsTheRuntimes(t *testing.T) {
	if spec.MaxPartitions != runtime.MaxPartitions {
		t.Fatalf("spec.MaxPartitions %d, runtime.MaxPartitions %d", spec.MaxPartitions, runtime.MaxPartitions)
	}
}
