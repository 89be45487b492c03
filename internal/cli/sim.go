package cli

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

func (a *app) simCommand() *cobra.Command {
	var addr string
	var check time.Duration
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Serve an in-process ZooKeeper simulator on a loopback port, for tests",
		Long: `Serve zkgen's ZooKeeper simulator (package runtime/zktest/sim) on a loopback
address until interrupted: a test server that speaks ZooKeeper's wire
protocol, so that the demo, zkgen inspect, go-zookeeper, Curator and kazoo
run against it without Java. It keeps nothing on disk and listens on
loopback addresses only. TTL nodes are allowed; containers and expired TTL
nodes are reaped every --ttl-check.`,
		Example: `  zkgen sim                         # 127.0.0.1:2181
  zkgen sim --addr 127.0.0.1:0      # a free port, printed on start`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			srv := sim.New(sim.WithTTLNodes(check))
			defer srv.Close()
			if err := srv.Listen(addr); err != nil {
				return userErrorf("sim: %v", err)
			}
			fmt.Fprintf(a.stdout, "zkgen sim: serving ZooKeeper on %s (interrupt to stop)\n", srv.Addr())
			<-ctx.Done()
			fmt.Fprintln(a.stdout, "zkgen sim: stopped")
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:2181", "loopback address to listen on")
	cmd.Flags().DurationVar(&check, "ttl-check", 100*time.Millisecond, "how often containers and expired TTL nodes are reaped")
	return cmd
}
