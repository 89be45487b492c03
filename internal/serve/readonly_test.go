package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// writeOps are the requests that change ZooKeeper's tree.
var writeOps = map[string]int32{
	"create": zktest.OpCreate, "create2": zktest.OpCreate2, "createContainer": zktest.OpCreateContainer,
	"createTTL": zktest.OpCreateTTL, "delete": zktest.OpDelete, "deleteContainer": zktest.OpDeleteContainer,
	"setData": zktest.OpSetData, "setACL": zktest.OpSetACL, "multi": zktest.OpMulti, "reconfig": zktest.OpReconfig,
}

// zkgen serve never writes to ZooKeeper: with every kind of the example in
// use (and a dead letter's stray reason, which a queue's listing of its
// dead letters would clean up), through a connection loss, serve's
// connection carries no request that changes the tree.
func TestServeOnlyReads(t *testing.T) {
	srv := zktest.Start(t, zktest.WithTTLNodes(time.Second))
	provision(t, srv.Addr())
	p := zktest.NewProxy(t, srv.Addr())
	base := startServe(t, p.Addr())

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exampleClient(t, ctx, srv.Servers())
	everyKind(ctx, t, c)

	// the last change: once serve shows it, it has read the others
	if _, err := c.Hits().Add(ctx, 42); err != nil {
		t.Fatal(err)
	}
	awaitState(t, base, func(st apiState) bool { return st.counter("hits") == 42 })
	p.CutAll()
	if _, err := c.Hits().Add(ctx, 1); err != nil {
		t.Fatal(err)
	}
	awaitState(t, base, func(st apiState) bool { return st.Up && st.counter("hits") == 43 })

	for name, op := range writeOps {
		if n := p.Requests(op); n != 0 {
			t.Errorf("zkgen serve sent %d %s requests", n, name)
		}
	}
	if n := p.Requests(zktest.OpGetChildren2) + p.Requests(zktest.OpGetChildren) + p.Requests(zktest.OpGetData) + p.Requests(zktest.OpExists); n == 0 {
		t.Errorf("zkgen serve read nothing through the proxy: the test checks nothing")
	}
}

// everyKind puts every kind of the example in use.
func everyKind(ctx context.Context, t *testing.T, c *coord.Client) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.OrderLock(1).Lock(ctx))
	must(c.TableLock("users").Read().Lock(ctx))
	_, err := c.Slots().Acquire(ctx)
	must(err)
	_, err = c.Leases().Acquire(ctx, "worker-1")
	must(err)
	must(c.Jobs().Put(ctx, coord.Job{Name: "j"}))
	must(c.Tasks().Put(ctx, coord.TasksNormal, coord.Job{Name: "t"}))
	must(c.Reminders().Put(ctx, coord.Job{Name: "r"}, time.Now().Add(time.Hour)))
	must(c.Outbox().Put(ctx, coord.Job{Name: "poison"}))
	for range 3 {
		d, err := c.Outbox().Take(ctx)
		must(err)
		must(d.Nack(ctx, errors.New("poison")))
	}
	// a reason whose dead letter is gone: DeadLetters removes such nodes
	_, err = c.Session().Conn().Create("/zkgen-example/queues/outbox/dead-reasons/b-0000000000.item-0000000099", []byte("stray"), 0, zk.WorldACL(zk.PermAll))
	must(err)
	must(c.Outbox().Put(ctx, coord.Job{Name: "o"}))
	must(c.Start("run-1").Raise(ctx))
	_, err = c.Scheduler().Campaign(ctx, coord.Member{Host: "h", Port: 1})
	must(err)
	_, err = c.Workers().Join(ctx, coord.Member{Host: "h", Port: 1})
	must(err)
	_, err = c.Flags().Set(ctx, coord.Flags{DarkMode: true})
	must(err)
	_, err = c.Shards().Join(ctx, coord.Member{Host: "h", Port: 1})
	must(err)
	tx := c.Deploy("d1")
	must(tx.Propose(ctx))
	must(tx.Join(ctx, coord.DeployDatabase))
	must(tx.Vote(ctx, coord.DeployDatabase, runtime.Commit))
	// a service registration, held by this session until ctx ends
	payments := coord.NewPayments()
	ran := make(chan error, 1)
	go func() { ran <- payments.Run(ctx, c.Session()) }()
	t.Cleanup(func() { <-ran })
	_, err = payments.Register(ctx, runtime.ServiceInstance[coord.PaymentsInstance]{Name: coord.PaymentsName, ID: "p1",
		Address: "10.0.0.7", Port: 8080, Payload: coord.PaymentsInstance{Zone: "eu-1"}})
	must(err)
}

// apiState is the part of /api/state the tests read.
type apiState struct {
	Up      bool   `json:"zookeeper_up"`
	Session string `json:"session"`
	Cache   struct {
		Mode string `json:"mode"`
	} `json:"cache"`
	Outage *struct {
		Reason string `json:"reason"`
	} `json:"outage"`
	Resources []struct {
		Name    string `json:"name"`
		Counter *struct {
			Value int64 `json:"value"`
		} `json:"counter"`
		Partitioner *struct {
			Unowned []int `json:"unowned"`
		} `json:"partitioner"`
	} `json:"resources"`
}

func (s apiState) unowned(name string) int {
	for _, r := range s.Resources {
		if r.Name == name && r.Partitioner != nil {
			return len(r.Partitioner.Unowned)
		}
	}
	return -1
}

func (s apiState) counter(name string) int64 {
	for _, r := range s.Resources {
		if r.Name == name && r.Counter != nil {
			return r.Counter.Value
		}
	}
	return -1
}

// awaitState polls /api/state until ok holds of it (serve has no other way
// to say that it has read something); it fails the test after a minute.
func awaitState(t *testing.T, base string, ok func(apiState) bool) {
	t.Helper()
	var last []byte
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(base + "/api/state")
		if err != nil {
			continue
		}
		last, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		var st apiState
		if err == nil && json.Unmarshal(last, &st) == nil && ok(st) {
			return
		}
	}
	t.Fatalf("/api/state never showed what the test waits for; last:\n%s", last)
}
