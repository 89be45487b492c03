package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/internal/inspect"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// zkgen inspect shows an at-least-once queue's dead letters, a delay
// queue's too: their count on the queue's line, one row each (payload,
// when moved, node), and in --json the dead_letters list.
func TestInspectDeadLetters(t *testing.T) {
	srv, ctx, root := specOf(t, "dead", `
  jobs: {kind: queue, path: /jobs, item: string, delivery: at_least_once, dead_letter_after: 1}
  later: {kind: delay_queue, path: /later, item: string, delivery: at_least_once, dead_letter_after: 1}
`)
	s := liveConnect(t, srv)
	q := runtime.NewAckQueue(s, runtime.At(root+"/jobs"), runtime.StringCodec(), runtime.WithDeadLetterAfter(1))
	if _, err := q.PutAll(ctx, []string{`{"name":"poison"}`, `{"name":"fine"}`}); err != nil {
		t.Fatal(err)
	}
	dq := runtime.NewAckDelayQueue(s, runtime.At(root+"/later"), runtime.StringCodec(), runtime.WithDeadLetterAfter(1))
	if _, err := dq.PutAll(ctx, []string{`{"name":"late-poison"}`, `{"name":"late-fine"}`}, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	// The first is given up with a reason (Nack), the second without
	// (Release); each is moved on its first delivery.
	for i, take := range []func(context.Context) (*runtime.Delivery[string], error){q.Take, dq.Take} {
		d, err := take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			err = d.Nack(ctx, errors.New("bad json: unexpected EOF"))
		} else {
			err = d.Release(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	servers := "--servers=" + strings.Join(srv.Servers(), ",")

	snap := inspectJSON(t, servers)
	if len(snap.Resources) != 2 {
		t.Fatalf("resources %+v", snap.Resources)
	}
	for _, want := range []struct{ name, payload, reason string }{{"jobs", `{"name":"poison"}`, "bad json: unexpected EOF"}, {"later", `{"name":"late-poison"}`, ""}} {
		var qs *inspect.QueueState
		for _, r := range snap.Resources {
			if r.Name == want.name {
				qs = r.Queue
			}
		}
		if qs == nil || qs.Depth != 1 || len(qs.DeadLetters) != 1 || compactJSON(t, qs.DeadLetters[0].Payload.JSON) != want.payload ||
			qs.DeadLetters[0].Moved.IsZero() || !strings.HasPrefix(qs.DeadLetters[0].Node, root+"/"+want.name+"/dead/") ||
			qs.DeadLetters[0].Reason != want.reason {
			t.Fatalf("%s: queue %+v", want.name, qs)
		}
	}

	r := zkgen(t, "inspect", servers)
	r.want(t, ExitOK, nil, empty)
	if strings.Count(r.stdout, ", 1 dead letter\n") != 2 {
		t.Errorf("queue lines without their dead letters:\n%s", r.stdout)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) >= 5 && f[0] == "dead" && f[1] == "letter" && f[3] == "moved" {
			rows[f[2]] = true
		}
	}
	if !rows[`{"name":"poison"}`] || !rows[`{"name":"late-poison"}`] {
		t.Errorf("dead letter rows %v:\n%s", rows, r.stdout)
	}
	if !strings.Contains(r.stdout, " ago: bad json: unexpected EOF  ") {
		t.Errorf("the dead letter's reason is not on its row:\n%s", r.stdout)
	}
}

// specOf starts ZooKeeper for an integration test (skipped with -short)
// and writes, in a fresh directory, a spec of resources under a root of
// its own, which it returns with the server and the test's context.
func specOf(t *testing.T, name, resources string) (*zktest.Server, context.Context, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	chdirTemp(t)
	root := fmt.Sprintf("/zkgen-cli-%s-%d", name, os.Getpid())
	writeFile(t, "zkgen.yaml", "version: 1\npackage: coord\nroot: "+root+"\nresources:"+resources)
	return srv, ctx, root
}

// inspectJSON runs zkgen inspect --json and decodes its document, which
// must be exactly the documented structure.
func inspectJSON(t *testing.T, servers string, more ...string) inspect.Snapshot {
	t.Helper()
	r := zkgen(t, append([]string{"inspect", servers, "--json"}, more...)...)
	r.want(t, ExitOK, nil, empty)
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	var snap inspect.Snapshot
	if err := dec.Decode(&snap); err != nil {
		t.Fatalf("--json does not parse: %v\n%s", err, r.stdout)
	}
	return snap
}
