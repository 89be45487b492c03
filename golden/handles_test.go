package golden

import (
	"testing"

	jobs "github.com/zkgen/zkgen/golden/dead_letters"
	pipeline "github.com/zkgen/zkgen/golden/queues_and_barriers"
)

// The generated handle interfaces carry the whole method set of their
// runtime types, so code written against them (c.Orders().Stats, Peek,
// DeadLetters, a delay queue's too) compiles: each method expression below must exist on the
// generated interface, or this file does not build.
func TestGeneratedQueueInterfaces(t *testing.T) {
	methods := []any{
		pipeline.RawFramesHandle.Stats, pipeline.RawFramesHandle.Peek,
		pipeline.OrdersHandle.Stats, pipeline.OrdersHandle.Peek, pipeline.OrdersHandle.DeadLetters,
		pipeline.AlertsHandle.Stats, pipeline.AlertsHandle.Peek,
		pipeline.FulfilmentHandle.Stats, pipeline.FulfilmentHandle.Peek, pipeline.FulfilmentHandle.DeadLetters,
		jobs.BuildsHandle.Stats, jobs.BuildsHandle.DeadLetters,
		jobs.DeploysHandle.Stats, jobs.DeploysHandle.DeadLetters,
		jobs.RolloutsHandle.Stats, jobs.RolloutsHandle.Peek, jobs.RolloutsHandle.DeadLetters,
	}
	for i, m := range methods {
		if m == nil {
			t.Fatalf("method %d is nil", i)
		}
	}
}
