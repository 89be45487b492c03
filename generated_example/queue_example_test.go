package example_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// clients starts a ZooKeeper and returns n generated clients, each on its
// own session, plus a context bounding the test.
func clients(t *testing.T, n int) (context.Context, []*coord.Client, []*runtime.Session) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	var cs []*coord.Client
	var ss []*runtime.Session
	for i := 0; i < n; i++ {
		s, err := runtime.Connect(ctx, srv.Servers(), runtime.WithSessionTimeout(4*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		cs = append(cs, coord.New(s))
		ss = append(ss, s)
	}
	return ctx, cs, ss
}

// The generated jobs queue moves typed Jobs in FIFO order from one session
// to another; the tasks priority queue serves urgent before normal before
// bulk, FIFO within each.
func TestGeneratedQueues(t *testing.T) {
	ctx, c, _ := clients(t, 2)
	prod, cons := c[0].Jobs(), c[1].Jobs()
	if prod.Path() != "/zkgen-example/queues/jobs" {
		t.Fatalf("path %q", prod.Path())
	}
	if err := prod.Put(ctx, coord.Job{Name: "first", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	if n, err := prod.PutAll(ctx, []coord.Job{{Name: "second"}, {Name: "third"}}); n != 2 || err != nil {
		t.Fatalf("PutAll = %d, %v", n, err)
	}
	if n, err := cons.Len(ctx); n != 3 || err != nil {
		t.Fatalf("Len = %d, %v", n, err)
	}
	j, err := cons.Take(ctx)
	if err != nil || j != (coord.Job{Name: "first", Attempt: 1}) {
		t.Fatalf("Take = %+v, %v", j, err)
	}
	rest, err := cons.TakeN(ctx, 10)
	if err != nil || len(rest) != 2 || rest[0].Name != "second" || rest[1].Name != "third" {
		t.Fatalf("TakeN = %+v, %v", rest, err)
	}

	tasks := c[0].Tasks()
	for _, p := range []struct {
		prio runtime.Priority
		name string
	}{{coord.TasksBulk, "b1"}, {coord.TasksNormal, "n1"}, {coord.TasksBulk, "b2"}, {coord.TasksUrgent, "u1"}, {coord.TasksNormal, "n2"}} {
		if err := tasks.Put(ctx, p.prio, coord.Job{Name: p.name}); err != nil {
			t.Fatal(err)
		}
	}
	var order []string
	for i := 0; i < 5; i++ {
		d, err := c[1].Tasks().Take(ctx) // at-least-once: a delivery, acked
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, d.Value.Name)
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if want := "u1 n1 n2 b1 b2"; strings.Join(order, " ") != want {
		t.Fatalf("served %v, want %s", order, want)
	}
}

// The generated start barrier holds a waiter until lowered; the generated
// epoch double barrier (size 3) lets its participants through Enter together
// and out of Leave together.
func TestGeneratedBarriers(t *testing.T) {
	ctx, c, _ := clients(t, 3)
	b := c[0].Start("run-1")
	if err := b.Raise(ctx); err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	go func() { released <- c[1].Start("run-1").Wait(ctx) }()
	if err := c[2].Start("run-1").Lower(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if err := c[0].Start("a/b").Raise(ctx); !errors.Is(err, runtime.ErrInvalidPath) {
		t.Fatalf("Raise with a bad parameter = %v", err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := c[i].Epoch(4)
			if err := d.Enter(ctx); err != nil {
				errs <- err
				return
			}
			errs <- d.Leave(ctx)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
