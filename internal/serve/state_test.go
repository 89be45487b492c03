package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// /api/state is the document of zkgen inspect --json, with serve's own
// fields beside it: with every kind of the example in use and nothing
// changing, the two list the same resources with the same state (ages
// aside: each is measured when its document is made).
func TestStateIsInspectsDocument(t *testing.T) {
	srv := zktest.Start(t, zktest.WithTTLNodes(time.Second))
	provision(t, srv.Addr())
	base := startServe(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exampleClient(t, ctx, srv.Servers())
	everyKind(ctx, t, c)
	if _, err := c.Hits().Add(ctx, 42); err != nil {
		t.Fatal(err)
	}
	// the partitioner's member acquires its partitions after Join returns
	awaitState(t, base, func(st apiState) bool { return st.Up && st.counter("hits") == 42 && st.unowned("shards") == 0 })

	var served map[string]any
	resp, err := http.Get(base + "/api/state")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(body, &served); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(zkgenBinary(t), "inspect", "--json", "-f", exampleSpec, "--servers", srv.Addr())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("zkgen inspect --json: %v", err)
	}
	var inspected map[string]any
	if err := json.Unmarshal(out, &inspected); err != nil {
		t.Fatal(err)
	}
	for k := range inspected {
		if _, ok := served[k]; !ok {
			t.Errorf("/api/state lacks inspect's field %q", k)
		}
	}
	for _, field := range []string{"zookeeper_up", "topology"} {
		if _, ok := served[field]; !ok {
			t.Errorf("/api/state lacks %q", field)
		}
	}
	// and /metrics has a series of every family these kinds' state gives
	m := scrape(t, base)
	for _, name := range []string{"zkgen_lock_holders", "zkgen_lock_waiters", "zkgen_lock_held_seconds", "zkgen_semaphore_leases",
		"zkgen_lease_holders", "zkgen_lease_slots", "zkgen_lease_seconds_to_expiry", "zkgen_queue_items", "zkgen_queue_claimed",
		"zkgen_queue_oldest_item_age_seconds", "zkgen_queue_dead_letters", "zkgen_queue_next_due_seconds", "zkgen_election_leader",
		"zkgen_election_leader_epoch", "zkgen_election_candidates", "zkgen_group_members", "zkgen_partitions",
		"zkgen_partitions_unowned", "zkgen_partitioner_members", "zkgen_partitions_owned", "zkgen_barrier_up",
		"zkgen_config_version", "zkgen_counter_value", "zkgen_transaction_proposed", "zkgen_transaction_votes",
		"zkgen_service_instances", "zkgen_service_instances_enabled",
		"zkgen_serve_instances", "zkgen_serve_instances_cut", "zkgen_serve_watches", "zkgen_serve_reads_total",
		"zkgen_serve_watch_requests_total", "zkgen_serve_sessions_total", "zkgen_serve_zookeeper_up"} {
		if m.count(name+"{") == 0 && m.count(name+" ") == 0 {
			if _, ok := m[name]; !ok {
				t.Errorf("/metrics has no %s series", name)
			}
		}
	}
	if v := m[`zkgen_transaction_votes{id="d1",resource="deploy",state="commit"}`]; v != 1 {
		t.Errorf("votes of d1 in commit: %v, want 1", v)
	}
	if v := m[`zkgen_service_instances{resource="payments",service="payments"}`]; v != 1 {
		t.Errorf("payments instances: %v, want 1", v)
	}
	if v := m[`zkgen_queue_dead_letters{resource="outbox"}`]; v != 1 {
		t.Errorf("outbox dead letters: %v, want 1", v)
	}

	a, b := withoutAges(served["resources"]), withoutAges(inspected["resources"])
	if !reflect.DeepEqual(a, b) {
		sa, _ := json.MarshalIndent(a, "", " ")
		sb, _ := json.MarshalIndent(b, "", " ")
		t.Errorf("resources differ:\n/api/state:\n%s\ninspect --json:\n%s", sa, sb)
	}
}

// withoutAges drops the fields measured at the document's making.
func withoutAges(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if !strings.HasSuffix(k, "age_seconds") {
				out[k] = withoutAges(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = withoutAges(x)
		}
		return out
	}
	return v
}
