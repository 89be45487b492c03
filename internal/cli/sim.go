package cli

import (
	"context"
	"fmt"
	"net"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

func (a *app) simCommand() *cobra.Command {
	var addr string
	var check time.Duration
	var servers int
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Serve an in-process ZooKeeper simulator on a loopback port, for tests",
		Long: `Serve zkgen's ZooKeeper simulator (package runtime/zktest/sim) on a loopback
address until interrupted: a test server that speaks ZooKeeper's wire
protocol, so that the demo, zkgen inspect, go-zookeeper, Curator and kazoo
run against it without Java. It keeps nothing on disk and listens on
loopback addresses only. With --servers N it is an ensemble of N servers
over one state (each applies the committed transactions itself; see the
package's SetDelay and IsolateServer for lag and isolation in tests). TTL nodes are allowed; containers and expired TTL
nodes are reaped every --ttl-check.`,
		Example: `  zkgen sim                         # 127.0.0.1:2181
  zkgen sim --addr 127.0.0.1:0      # a free port, printed on start
  zkgen sim --servers 3             # an ensemble on 127.0.0.1:2181-2183`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if servers < 1 {
				return userErrorf("sim: --servers must be >= 1, got %d", servers)
			}
			host, portText, err := net.SplitHostPort(addr)
			if err != nil {
				return userErrorf("sim: --addr %q: %v", addr, err)
			}
			port, err := strconv.Atoi(portText)
			if err != nil {
				return userErrorf("sim: --addr %q: bad port", addr)
			}
			srv := sim.NewEnsemble(servers, sim.WithTTLNodes(check))
			defer srv.Close()
			for i := range servers {
				p := port
				if p != 0 {
					p += i // consecutive ports
				}
				if err := srv.ListenServer(i, net.JoinHostPort(host, strconv.Itoa(p))); err != nil {
					return userErrorf("sim: %v", err)
				}
			}
			fmt.Fprintf(a.stdout, "zkgen sim: serving ZooKeeper on %s (interrupt to stop)\n", strings.Join(srv.Servers(), ","))
			<-ctx.Done()
			fmt.Fprintln(a.stdout, "zkgen sim: stopped")
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:2181", "loopback address to listen on")
	cmd.Flags().DurationVar(&check, "ttl-check", 100*time.Millisecond, "how often containers and expired TTL nodes are reaped")
	cmd.Flags().IntVar(&servers, "servers", 1, "servers in the ensemble, on consecutive ports from --addr's (port 0: free ports)")
	return cmd
}
