package example_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// A service built on the generated handles, tested with no Java and no
// ZooKeeper installed: the simulator runs in the test process, and the
// generated Run connects to it through runtime.WithDialer. Under
// testing/synctest the session timeouts run on virtual time, so the
// service's behaviour across a session expiry — its lock lost, Run
// starting it again on a new session, the work finished there — takes
// milliseconds.
func TestServiceOnSimulator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Last: let the goroutines that outlive a closed session end
		// (go-zookeeper's Close waits up to a second); free on virtual time.
		defer time.Sleep(time.Minute)
		srv := sim.New()
		defer srv.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()

		// The service: under order lock 7, take a job and record it.
		done := make(chan string, 1)
		sessions := make(chan int64, 2)
		service := func(ctx context.Context, c *coord.Client) error {
			l := c.OrderLock(7)
			if err := l.Lock(ctx); err != nil {
				return err
			}
			defer l.Unlock(context.WithoutCancel(ctx))
			job, err := c.Jobs().Take(l.Context())
			if err != nil {
				return err
			}
			done <- job.Name
			<-ctx.Done()
			return nil
		}
		run := make(chan error, 1)
		go func() {
			run <- coord.Run(ctx, []string{"127.0.0.1:2181"}, service,
				runtime.WithDialer(srv.DialContext), runtime.WithSessionTimeout(10*time.Second),
				runtime.WithLogger(slog.New(slog.DiscardHandler)),
				runtime.WithSessionEvents(func(ev runtime.SessionEvent) { sessions <- ev.ID }))
		}()

		// nextSession waits for Run's next session; Run must not end.
		nextSession := func() int64 {
			select {
			case id := <-sessions:
				return id
			case err := <-run:
				t.Fatalf("Run returned %v instead of starting a new session", err)
				return 0
			}
		}
		// The first session expires while the service waits for a job.
		first := nextSession()
		synctest.Wait() // the service waits for a job
		srv.ExpireSession(first)
		if second := nextSession(); second == first {
			t.Fatal("Run did not start a new session")
		}

		// A producer puts the job; the service, on its new session, takes it.
		ps, err := runtime.Connect(ctx, []string{"127.0.0.1:2181"}, runtime.WithDialer(srv.DialContext))
		if err != nil {
			t.Fatal(err)
		}
		defer ps.Close()
		if err := coord.New(ps).Jobs().Put(ctx, coord.Job{Name: "invoice-1"}); err != nil {
			t.Fatal(err)
		}
		if got := <-done; got != "invoice-1" {
			t.Fatalf("the service took %q", got)
		}
		cancel()
		if err := <-run; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
	})
}
