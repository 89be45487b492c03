package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkgen/zkgen/internal/doctor"
	"github.com/zkgen/zkgen/runtime"
)

func (a *app) doctorCommand() *cobra.Command {
	var f liveFlags
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check that the ZooKeeper servers allow what the spec needs",
		Long: `Connect to ZooKeeper and check, for this spec, what the servers must
allow, one line per check: ok, FAIL (with what to change in the servers'
configuration, or in the client's settings), unknown (it could not be
learned, and why) or skipped (the spec does not need it):

  connect         a session with --servers
  tls             the session's TLS (with --tls-ca/--tls-cert)
  version         each server's version (srvr): 3.5.3 or later
  4lw             the four-letter words zkgen needs: none
  containers      a container made and deleted under the spec's root
  ttl             a TTL node made and deleted, when the spec has a lease
                  (zookeeper.extendedTypesEnabled=true)
  jute.maxbuffer  each server takes the largest request the spec's sizes
                  make (a partitioner's plan)
  listing         the largest listing the spec's sizes allow, against each
                  server's jute.maxbuffer
  acl             in every directory the resources' nodes go in, a node
                  made, read, written and deleted with the declared ACL,
                  as this session (--auth)

doctor writes only its probe nodes, named zkgen-doctor-<host>-<pid>-<n>,
and deletes them. --timeout bounds each probe too. Exit status 1 when a check fails (the spec needs
something the servers or the credentials do not give), 0 otherwise.`,
		Example: `  zkgen doctor --servers zk-0.zk-hs:2181,zk-1.zk-hs:2181,zk-2.zk-hs:2181
  zkgen doctor -f svc/zkgen.yaml --auth svc:secret --tls-ca ca.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.doctor(&f) },
	}
	f.register(cmd)
	return cmd
}

// doctor runs the checks and prints their lines; a failed check is exit 1.
func (a *app) doctor(f *liveFlags) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	s, dial, err := a.live(f)
	if err != nil {
		return err
	}
	servers, _ := f.serverList() // live checked them
	tlsConf, _ := f.tlsConfig()
	connect := func(ctx context.Context) (*runtime.Session, error) {
		sess, err := dial(ctx)
		var fl *failure
		if errors.As(err, &fl) { // the line says it without the "zkgen: "
			plain := *fl
			plain.msg = strings.TrimPrefix(fl.msg, "zkgen: ")
			return nil, &plain
		}
		return sess, err
	}
	lines := doctor.Run(ctx, doctor.Options{Spec: s, Servers: servers, TLS: tlsConf,
		Auth: len(f.auth) > 0, Timeout: f.timeout, Connect: connect})
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.String() + "\n")
	}
	if err := write(a.stdout, b.String()); err != nil {
		return err
	}
	if failed := doctor.Failed(lines); len(failed) > 0 {
		return userErrorf("doctor: the servers lack what the spec needs: %s failed", strings.Join(failed, ", "))
	}
	return nil
}
