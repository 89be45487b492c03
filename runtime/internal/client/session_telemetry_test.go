package client

import "testing"

// With no meter provider a session's counters are nil, and the hooks the
// session calls return at once: no allocation, nothing recorded.
func TestSessionMetricsOffAllocateNothing(t *testing.T) {
	sm, err := newSessionMetrics(TelemetryConfig{})
	if sm != nil || err != nil {
		t.Fatalf("newSessionMetrics without providers = %v, %v; want nil, nil", sm, err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		sm.retried(Recoverable)
		sm.connectionLost()
		sm.expired(true)
	})
	if allocs != 0 {
		t.Errorf("hooks without telemetry allocate %v times per run, want 0", allocs)
	}
}
