package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"github.com/spf13/cobra"

	"github.com/zkgen/zkgen/internal/serve"
	"github.com/zkgen/zkgen/runtime"
)

// serveLong is zkgen serve's help.
const serveLong = `Keep a live model of every resource the spec declares, from ZooKeeper
watches, and serve it over HTTP on --addr (loopback unless told otherwise):

  /            a live page of the topology (the boxes of zkgen graph), each
               resource with its state: holders and waiters with their ages,
               queue depths, the leader, members, partition owners, lease
               expiries, barrier counts; it updates itself as ZooKeeper changes
  /metrics     the recipe facts in the Prometheus exposition format, labelled
               by resource name and path parameters (docs/operating.md lists
               them, and ships alerting rules)
  /api/state   the same state as JSON: the document of zkgen inspect --json,
               with zookeeper_up, outage and topology beside it

Parameterised resources are followed as their instances appear and
disappear, up to --max-instances per resource (the rest are counted in
zkgen_serve_instances_cut). serve only reads: it never writes to ZooKeeper.
When ZooKeeper stops answering or the session expires, the page says so and
zkgen_serve_zookeeper_up is 0 (the other metrics keep the last values read);
serve reconnects, on a new session if need be, and reads everything again.

The page shows queue items, config values, members' payloads and session
ids. On an address other hosts reach, protect it as Prometheus exporters
are protected: --web.config.file names a web configuration file (TLS and
basic auth, the format of the Prometheus exporter toolkit). serve refuses
such an address without one, unless --web.open says it is meant.`

func (a *app) serveCommand() *cobra.Command {
	var f liveFlags
	var addr string
	var maxInstances int
	var settle time.Duration
	var w webFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the live state of every declared resource: metrics, a live page, JSON",
		Long:  serveLong,
		Example: `  zkgen serve --servers zk1:2181,zk2:2181
  zkgen serve --addr 127.0.0.1:9464 --max-instances 5000
  zkgen serve --addr :9464 --web.config.file web.yml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if maxInstances <= 0 {
				return userErrorf("--max-instances must be positive, got %d", maxInstances)
			}
			if settle <= 0 {
				return userErrorf("--settle must be positive, got %v", settle)
			}
			if err := w.check(); err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return userErrorf("--addr: %v", err)
			}
			if err := w.exposed(ln); err != nil {
				ln.Close()
				return err
			}
			s, dial, err := a.live(&f, runtime.WithReadOnly())
			if err != nil {
				ln.Close()
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			m := serve.New(serve.Options{Spec: s, Dial: dial,
				MaxInstances: maxInstances, Settle: settle, Log: log})
			return a.serveHTTP(ctx, ln, m, w, log)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:9464", "address to serve HTTP on (host:port)")
	cmd.Flags().IntVar(&maxInstances, "max-instances", 1000, "follow at most this many instances of each parameterised resource")
	cmd.Flags().DurationVar(&settle, "settle", 100*time.Millisecond, "gather watch events for this long before reading what they touched")
	cmd.Flags().StringVar(&w.config, "web.config.file", "", "web configuration file for TLS and basic auth (the Prometheus exporter toolkit's format)")
	cmd.Flags().BoolVar(&w.open, "web.open", false, "serve an address other hosts reach without --web.config.file")
	return cmd
}

// serveHTTP runs the model and its HTTP server until ctx ends.
func (a *app) serveHTTP(ctx context.Context, ln net.Listener, m *serve.Model, w webFlags, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &http.Server{Handler: serve.Handler(m), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	fmt.Fprintf(a.stderr, "zkgen serve: %s://%s/ (metrics at /metrics, state at /api/state)\n", w.scheme, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- web.Serve(ln, srv, w.toolkit(), log) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	srv.Shutdown(sctx)
	<-done
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return internalErrorf("serve: %v", err)
	}
	return nil
}
