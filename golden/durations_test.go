package golden

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	nanos "github.com/zkgen/zkgen/golden/durations_nanoseconds"
	"github.com/zkgen/zkgen/golden/payload_types"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// oldShard is Shard as zkgen generated it before durations were stored as
// strings: plain time.Duration fields, which encoding/json writes as
// integer nanoseconds. It stands for a process not yet upgraded.
type oldShard struct {
	ID       int             `json:"id"`
	Lease    time.Duration   `json:"lease"`
	Timeouts []time.Duration `json:"timeouts"`
	Tags     []string        `json:"tags"`
}

func TestDurationJSON(t *testing.T) {
	v := payloads.Shard{ID: 3, Lease: 90 * time.Second, Timeouts: []time.Duration{time.Millisecond, 0, -2 * time.Hour},
		Tags: []string{"a"}, Children: []payloads.Shard{{Lease: time.Second}}}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"lease":"1m30s"`, `"timeouts":["1ms","0s","-2h0m0s"]`, `"id":3`, `"tags":["a"]`, `"children":[{"id":0,`, `"lease":"1s"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("%s lacks %s", data, want)
		}
	}
	var back payloads.Shard
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.ID != 3 || back.Lease != v.Lease || !slices.Equal(back.Timeouts, v.Timeouts) || len(back.Children) != 1 || back.Children[0].Lease != time.Second {
		t.Errorf("round trip: %+v", back)
	}

	// What older processes stored (integers), and mixed arrays, still read.
	for src, want := range map[string]time.Duration{
		`{"lease":1500000000}`: 1500 * time.Millisecond, `{"lease":"1.5s"}`: 1500 * time.Millisecond,
		`{"lease":-1}`: -1, `{"lease":null}`: 0, `{}`: 0,
	} {
		var s payloads.Shard
		if err := json.Unmarshal([]byte(src), &s); err != nil || s.Lease != want {
			t.Errorf("%s: lease %v, %v; want %v", src, s.Lease, err, want)
		}
	}
	var s payloads.Shard
	if err := json.Unmarshal([]byte(`{"timeouts":[1000,"2s"]}`), &s); err != nil || !slices.Equal(s.Timeouts, []time.Duration{time.Microsecond, 2 * time.Second}) {
		t.Errorf("mixed timeouts %v, %v", s.Timeouts, err)
	}
	for _, bad := range []string{`{"lease":"soon"}`, `{"lease":1.5}`, `{"lease":true}`, `{"timeouts":"1s"}`} {
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}

// TestDurationRollingDeploy: during a rolling deploy, a config value
// written by an old process (integer nanoseconds) reads through the new
// generated handle, and what the new handle writes is a duration string.
func TestDurationRollingDeploy(t *testing.T) {
	ctx, sess := zkSession(t)
	c := payloads.New(sess).ShardConfig(7)
	raw := runtime.NewConfig(sess, runtime.At("/payloads/config/7"), runtime.JSONCodec[oldShard]())
	rawBytes := runtime.NewConfig(sess, runtime.At("/payloads/config/7"), runtime.BytesCodec())

	// An old process writes.
	if _, err := raw.Set(ctx, oldShard{ID: 7, Lease: 2 * time.Minute, Timeouts: []time.Duration{time.Second}}); err != nil {
		t.Fatal(err)
	}
	if data, _, err := rawBytes.Get(ctx); err != nil || !strings.Contains(string(data), `"lease":120000000000`) {
		t.Fatalf("old process wrote %s, %v", data, err)
	}
	got, _, err := c.Get(ctx)
	if err != nil || got.ID != 7 || got.Lease != 2*time.Minute || !slices.Equal(got.Timeouts, []time.Duration{time.Second}) {
		t.Fatalf("new process read %+v, %v", got, err)
	}

	// The new process writes strings.
	got.Lease = 45 * time.Second
	if _, err := c.Set(ctx, got); err != nil {
		t.Fatal(err)
	}
	data, _, err := rawBytes.Get(ctx)
	if err != nil || !strings.Contains(string(data), `"lease":"45s"`) || !strings.Contains(string(data), `"timeouts":["1s"]`) {
		t.Fatalf("new process wrote %s, %v", data, err)
	}
	// An old process cannot read that: this is why the upgrade's
	// order matters.
	if _, _, err := raw.Get(ctx); err == nil {
		t.Errorf("an old process decoded a duration string")
	}
}

// oldLease is durations_nanoseconds' Lease as zkgen generated it before
// durations were strings: it reads integers only.
type oldLease struct {
	TTL   time.Duration   `json:"ttl"`
	Steps []time.Duration `json:"steps"`
}

// TestDurationUpgradeSteps: the two steps of the upgrade (docs/spec.md), through
// ZooKeeper. Step 1 (durations: nanoseconds) writes integers that a process
// of the old zkgen reads, and reads the strings step 2 writes.
func TestDurationUpgradeSteps(t *testing.T) {
	ctx, sess := zkSession(t)
	step1 := nanos.New(sess).Lease()
	old := runtime.NewConfig(sess, runtime.At("/nanos/lease"), runtime.JSONCodec[oldLease]())
	raw := runtime.NewConfig(sess, runtime.At("/nanos/lease"), runtime.BytesCodec())

	want := nanos.Lease{TTL: 90 * time.Second, Steps: []time.Duration{time.Second, 2 * time.Second}}
	if _, err := step1.Set(ctx, want); err != nil {
		t.Fatal(err)
	}
	if data, _, err := raw.Get(ctx); err != nil || string(data) != `{"ttl":90000000000,"steps":[1000000000,2000000000]}` {
		t.Fatalf("step 1 wrote %s, %v; want integers", data, err)
	}
	if got, _, err := old.Get(ctx); err != nil || got.TTL != want.TTL || !slices.Equal(got.Steps, want.Steps) {
		t.Fatalf("an old process read %+v, %v", got, err)
	}
	// What a step-2 process writes, step 1 reads.
	if _, err := raw.Set(ctx, []byte(`{"ttl":"1m30s","steps":["1s",2000000000]}`)); err != nil {
		t.Fatal(err)
	}
	if got, _, err := step1.Get(ctx); err != nil || got.TTL != want.TTL || !slices.Equal(got.Steps, want.Steps) {
		t.Fatalf("step 1 read %+v, %v", got, err)
	}
}

// zkSession starts a ZooKeeper server and opens a session to it, both ended
// with the test; integration tests are skipped with -short.
func zkSession(t *testing.T) (context.Context, *runtime.Session) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	sess, err := runtime.Connect(ctx, srv.Servers())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return ctx, sess
}
