// Command demo takes the example's order lock for a shard, shows who holds
// it, and releases it. It needs a ZooKeeper server: ZK_SERVERS (default
// 127.0.0.1:2181).
//
//	go run ./generated_example/cmd/demo -shard 7
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
)

func main() {
	shard := flag.Int("shard", 7, "order shard to lock")
	hold := flag.Duration("hold", time.Second, "how long to hold the lock")
	flag.Parse()
	if err := run(*shard, *hold); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(shard int, hold time.Duration) error {
	servers := os.Getenv("ZK_SERVERS")
	if servers == "" {
		servers = "127.0.0.1:2181"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := runtime.Connect(ctx, strings.Split(servers, ","), runtime.WithSessionTimeout(5*time.Second))
	if err != nil {
		return err
	}
	defer sess.Close()

	c := coord.New(sess)
	l := c.OrderLock(shard)
	l.SetPurpose("demo")
	if err := l.Lock(ctx); err != nil {
		return err
	}
	fmt.Printf("holding %s with fencing token %d\n", l.Path(), l.Token())
	holders, err := l.Holders(ctx)
	if err != nil {
		return err
	}
	for _, h := range holders {
		fmt.Printf("  %s holds=%v host=%s pid=%d purpose=%q\n", h.Node, h.Holds, h.Owner.Host, h.Owner.PID, h.Owner.Purpose)
	}
	select {
	case <-l.Lost():
		return fmt.Errorf("lock lost while working")
	case <-time.After(hold):
	}
	return l.Unlock(ctx)
}
