package coord_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
)

// The examples run against the ZooKeeper that TestMain starts (main_test.go):
// servers() is its address, and client() a Client on a new session to it,
// as in ExampleNew, with the function that closes the session.

// servers returns the address of the examples' ZooKeeper.
func servers() []string {
	if shared == nil {
		panic(fmt.Sprint("the examples have no ZooKeeper: ", sharedErr))
	}
	return shared.Servers()
}

// client connects to the examples' ZooKeeper and returns a Client on the
// session and the session's Close.
func client() (*coord.Client, func() error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := runtime.Connect(ctx, servers())
	if err != nil {
		panic(err)
	}
	return coord.New(sess), sess.Close
}

// A Client hands out the handles of zkgen.yaml on one session.
func ExampleNew() {
	ctx := context.Background()
	sess, err := runtime.Connect(ctx, servers(), runtime.WithSessionTimeout(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	c := coord.New(sess)

	l := c.OrderLock(7)
	fmt.Println(l.Path())
	if err := l.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	// ... write shard 7, fenced by l.Token() ...
	l.Unlock(ctx)
	// Output:
	// /zkgen-example/locks/orders/7
}

// Run keeps a service's coordination going across sessions: fn runs on a
// Client, and again on a new one each time the session ends, until ctx ends
// or fn is done (returns nil).
func ExampleRun() {
	ctx := context.Background()
	err := coord.Run(ctx, servers(), func(ctx context.Context, c *coord.Client) error {
		m, err := c.Workers().Join(ctx, coord.Member{Host: "10.0.0.1", Port: 8080})
		if err != nil {
			return err // the session's end: Run calls fn again on a new one
		}
		fmt.Println("member:", m.Member().Host)
		return m.Leave(ctx)
	})
	fmt.Println("done:", err)
	// Output:
	// member: 10.0.0.1
	// done: <nil>
}

// Each call of OrderLock is a new contender: a second one cannot take shard
// 7 while the first holds it, but another shard is another lock. Do holds
// the lock while a function runs.
func ExampleClient_OrderLock() {
	ctx := context.Background()
	c, closeSession := client()
	defer closeSession()

	err := c.OrderLock(7).Do(ctx, func(ctx context.Context) error {
		ok, err := c.OrderLock(7).TryLock(ctx)
		fmt.Println("shard 7 again:", ok, err)
		other := c.OrderLock(8)
		ok, err = other.TryLock(ctx)
		fmt.Println("shard 8:", ok, err)
		return other.Unlock(ctx)
	})
	fmt.Println("released:", err)
	// Output:
	// shard 7 again: false <nil>
	// shard 8: true <nil>
	// released: <nil>
}

// The read/write lock of one table: readers share it, a writer waits for
// them. A table name that would escape the path is refused before any
// request.
func ExampleClient_TableLock() {
	ctx := context.Background()
	c, closeSession := client()
	defer closeSession()

	r := c.TableLock("users").Read()
	if err := r.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	ok, _ := c.TableLock("users").Read().TryLock(ctx)
	fmt.Println("second reader:", ok)
	ok, _ = c.TableLock("users").Write().TryLock(ctx)
	fmt.Println("writer:", ok)
	r.Unlock(ctx)

	_, err := c.TableLock("../etc").Write().TryLock(ctx)
	fmt.Println(errors.Is(err, runtime.ErrInvalidPath))
	// Output:
	// second reader: true
	// writer: false
	// true
}

// The slots semaphore grants 3 leases at once (leases: 3 in the spec); each
// Slots() is one participant.
func ExampleClient_Slots() {
	ctx := context.Background()
	c, closeSession := client()
	defer closeSession()

	var leases []*runtime.Lease
	for range 3 {
		le, err := c.Slots().Acquire(ctx)
		if err != nil {
			log.Fatal(err)
		}
		leases = append(leases, le)
	}
	holders, _ := c.Slots().Holders(ctx)
	fmt.Println("held:", len(holders))
	for _, le := range leases {
		le.Release(ctx)
	}
	// Output:
	// held: 3
}

// The jobs queue carries typed Jobs, first in first out, at most once.
func ExampleClient_Jobs() {
	ctx := context.Background()
	c, closeSession := client()
	defer closeSession()

	jobs := c.Jobs()
	jobs.Put(ctx, coord.Job{Name: "resize", Attempt: 1})
	jobs.PutAll(ctx, []coord.Job{{Name: "thumbnail"}, {Name: "notify"}})
	for range 3 {
		j, err := jobs.Take(ctx) // blocks until there is one
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%+v\n", j)
	}
	// Output:
	// {Name:resize Attempt:1}
	// {Name:thumbnail Attempt:0}
	// {Name:notify Attempt:0}
}

// The tasks queue (delivery: at_least_once) serves urgent before normal
// before bulk; Consume acks an item when the function returns nil and
// releases it when it fails (delivered again after a backoff).
func ExampleClient_Tasks() {
	c, closeSession := client()
	defer closeSession()

	tasks := c.Tasks()
	ctx, stop := context.WithCancel(context.Background())
	tasks.Put(ctx, coord.TasksBulk, coord.Job{Name: "reindex"})
	tasks.Put(ctx, coord.TasksUrgent, coord.Job{Name: "page on-call"})
	tasks.Put(ctx, coord.TasksNormal, coord.Job{Name: "email"})

	served := 0
	err := tasks.Consume(ctx, func(ctx context.Context, j coord.Job) error {
		fmt.Println(j.Name)
		if served++; served == 3 {
			stop() // this one is still acked
		}
		return nil
	})
	fmt.Println("stopped:", err)
	// Output:
	// page on-call
	// email
	// reindex
	// stopped: <nil>
}

// Reminders come out once due, earliest due first, whatever the order they
// were put in; one due in the past comes at once.
func ExampleClient_Reminders() {
	c, closeSession := client()
	defer closeSession()

	reminders := c.Reminders()
	ctx, stop := context.WithCancel(context.Background())
	now := time.Now()
	reminders.Put(ctx, coord.Job{Name: "send invoice"}, now.Add(300*time.Millisecond))
	reminders.Put(ctx, coord.Job{Name: "welcome"}, now.Add(-time.Second))
	reminders.Put(ctx, coord.Job{Name: "follow up"}, now.Add(100*time.Millisecond))

	served := 0
	err := reminders.Consume(ctx, func(ctx context.Context, j coord.Job) error {
		fmt.Println(j.Name)
		if served++; served == 3 {
			stop() // this one is still acked
		}
		return nil
	})
	fmt.Println("stopped:", err)
	// Output:
	// welcome
	// follow up
	// send invoice
	// stopped: <nil>
}

// The start barrier of one run holds its waiters until it is lowered.
func ExampleClient_Start() {
	ctx := context.Background()
	c, closeSession := client()
	defer closeSession()

	b := c.Start("run-1")
	if err := b.Raise(ctx); err != nil {
		log.Fatal(err)
	}
	released := make(chan error)
	go func() { released <- c.Start("run-1").Wait(ctx) }()
	b.Lower(ctx)
	fmt.Println("released:", <-released)
	// Output:
	// released: <nil>
}

// The epoch double barrier (size: 3): its three participants enter
// together and leave together. Each round uses its own n.
func ExampleClient_Epoch() {
	ctx := context.Background()
	c, closeSession := client()
	defer closeSession()

	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Go(func() {
			e := c.Epoch(1)
			if err := e.Enter(ctx); err != nil {
				errs <- err
				return
			}
			// ... the round's work, once all three are in ...
			errs <- e.Leave(ctx)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		fmt.Println("through:", err)
	}
	// Output:
	// through: <nil>
	// through: <nil>
	// through: <nil>
}

// The deploy transaction's participants are constants; each joins and
// votes, and every Outcome is the same decision.
func ExampleClient_Deploy() {
	ctx := context.Background()
	c, closeSession := client()
	defer closeSession()

	tx := c.Deploy("v42")
	if err := tx.ProposeWith(ctx, []byte("release v42")); err != nil {
		log.Fatal(err)
	}
	for _, p := range tx.Participants() { // in each participant's process
		h := c.Deploy("v42")
		if err := h.Join(ctx, p); err != nil {
			log.Fatal(err)
		}
		vote := runtime.Commit
		if p == coord.DeploySearch {
			vote = runtime.Abort // search cannot take the new schema
		}
		if err := h.Vote(ctx, p, vote); err != nil {
			log.Fatal(err)
		}
	}
	d, err := tx.Outcome(ctx)
	fmt.Println("outcome:", d, err)
	tx.Remove(ctx)
	// Output:
	// outcome: abort <nil>
}

// The scheduler election: Run campaigns, runs the function while leader
// (its ctx ends if the leadership is lost) and campaigns again when it
// returns, until ctx ends.
func ExampleClient_Scheduler() {
	c, closeSession := client()
	defer closeSession()

	ctx, stop := context.WithCancel(context.Background())
	me := coord.Member{Host: "10.0.0.1", Port: 8080}
	err := c.Scheduler().Run(ctx, me, func(ctx context.Context, l *runtime.Leadership[coord.Member]) error {
		leader, _ := c.Scheduler().Leader(ctx)
		fmt.Println("leader:", leader.Host)
		stop() // done for good; returning nil alone would campaign again
		return nil
	})
	fmt.Println("stopped:", err)
	// Output:
	// leader: 10.0.0.1
	// stopped: <nil>
}

// Members of the workers group, in join order.
func ExampleClient_Workers() {
	ctx := context.Background()
	c, closeSession := client()
	defer closeSession()

	for _, port := range []int{8080, 8081} {
		if _, err := c.Workers().Join(ctx, coord.Member{Host: "10.0.0.1", Port: port}); err != nil {
			log.Fatal(err)
		}
	}
	members, _ := c.Workers().Members(ctx)
	fmt.Printf("%+v\n", members) // they leave with the session
	// Output:
	// [{Host:10.0.0.1 Port:8080} {Host:10.0.0.1 Port:8081}]
}

// The flags config: a typed value with compare-and-set.
func ExampleClient_Flags() {
	ctx := context.Background()
	c, closeSession := client()
	defer closeSession()

	ver, err := c.Flags().Set(ctx, coord.Flags{MaxBatch: 10})
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.Flags().CompareAndSet(ctx, coord.Flags{DarkMode: true, MaxBatch: 20}, ver)
	fmt.Println("compare-and-set:", err)
	f, _, _ := c.Flags().Get(ctx)
	fmt.Printf("%+v\n", f)
	c.Flags().Delete(ctx)
	// Output:
	// compare-and-set: <nil>
	// {DarkMode:true MaxBatch:20}
}
