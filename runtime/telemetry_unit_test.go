package runtime

import (
	"context"
	"errors"
	"testing"
	"time"
)

// With no provider a session's telemetry is nil, and every hook the
// recipes call returns at once: no allocation, nothing recorded.
func TestTelemetryOffAllocatesNothing(t *testing.T) {
	tel, err := newTelemetry(telConfig{})
	if tel != nil || err != nil {
		t.Fatalf("newTelemetry without providers = %v, %v; want nil, nil", tel, err)
	}
	ctx := context.Background()
	l := NewLock(nil, At("/a/b"), WithResourceName("orders"))
	h := &hold{lost: make(chan struct{})}
	fail := errors.New("x")
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		tel.lockOp(ctx, opLockAcquire, l).acquired(h, nil)
		sp := tel.begin(ctx, opQueuePut, queueKind(false), "jobs", "/a/b")
		err = fail
		sp.end(&err)
		tel.tenureOf(h, "group", "g", "/a/b")
		tel.failover(tel.now(), "e", "/a/b")
		tel.failover(time.Now(), "e", "/a/b")
		tel.retried(Recoverable)
		tel.connectionLost()
		tel.expired(true)
	})
	if allocs != 0 {
		t.Errorf("hooks without telemetry allocate %v times per run, want 0", allocs)
	}
	if h.tel.Load() != nil {
		t.Error("a tenure was marked for recording without telemetry")
	}
}
