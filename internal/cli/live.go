package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkgen/zkgen/internal/inspect"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// liveFlags are the flags of the commands that talk to a ZooKeeper
// (inspect, reap, provision).
type liveFlags struct {
	specPath string
	servers  string
	timeout  time.Duration
	auth     []string
	tlsCA    string // --tls-ca, ZK_TLS_CA
	tlsCert  string // --tls-cert, ZK_TLS_CERT
	tlsKey   string // --tls-key, ZK_TLS_KEY
}

// The environment variables beside ZK_SERVERS that give the TLS flags'
// defaults.
const (
	envTLSCA   = "ZK_TLS_CA"
	envTLSCert = "ZK_TLS_CERT"
	envTLSKey  = "ZK_TLS_KEY"
)

// defaultServers is ZK_SERVERS, else 127.0.0.1:2181.
func defaultServers() string {
	if s := strings.TrimSpace(os.Getenv("ZK_SERVERS")); s != "" {
		return s
	}
	return "127.0.0.1:2181"
}

func (f *liveFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.specPath, "file", "f", defaultSpec, "spec file to read")
	cmd.Flags().StringVar(&f.servers, "servers", defaultServers(), "ZooKeeper servers, host:port,... (default from ZK_SERVERS)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 5*time.Second, "give up connecting after this long")
	cmd.Flags().StringArrayVar(&f.auth, "auth", nil, "digest credentials user:password (repeatable)")
	cmd.Flags().StringVar(&f.tlsCA, "tls-ca", os.Getenv(envTLSCA), "PEM file of the CA certificates that sign the servers' (turns TLS on; default from "+envTLSCA+")")
	cmd.Flags().StringVar(&f.tlsCert, "tls-cert", os.Getenv(envTLSCert), "PEM client certificate to present over TLS, with --tls-key (turns TLS on; default from "+envTLSCert+")")
	cmd.Flags().StringVar(&f.tlsKey, "tls-key", os.Getenv(envTLSKey), "PEM private key of --tls-cert (default from "+envTLSKey+")")
}

// tlsConfig builds the TLS configuration of the flags: nil (plain) when
// none is set. Without --tls-ca the system's CAs verify the servers.
func (f *liveFlags) tlsConfig() (*tls.Config, error) {
	if f.tlsCA == "" && f.tlsCert == "" && f.tlsKey == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.tlsCA != "" {
		data, err := os.ReadFile(f.tlsCA)
		if err != nil {
			return nil, userErrorf("--tls-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, userErrorf("--tls-ca %s: no PEM certificate in it", f.tlsCA)
		}
		cfg.RootCAs = pool
	}
	switch {
	case f.tlsCert != "" && f.tlsKey != "":
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return nil, userErrorf("--tls-cert/--tls-key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case f.tlsCert != "":
		return nil, userErrorf("--tls-cert needs --tls-key (or %s)", envTLSKey)
	case f.tlsKey != "":
		return nil, userErrorf("--tls-key needs --tls-cert (or %s)", envTLSCert)
	}
	return cfg, nil
}

// connect parses the spec and opens a session. Both errors are failures:
// ExitFailure for a spec problem, bad flags or an unreachable server.
func (a *app) connect(ctx context.Context, f *liveFlags) (*spec.Spec, *runtime.Session, error) {
	s, dial, err := a.live(f)
	if err != nil {
		return nil, nil, err
	}
	sess, err := dial(ctx)
	if err != nil {
		return nil, nil, err
	}
	return s, sess, nil
}

// dialFunc opens a session with a command's flags, giving up after
// --timeout; its errors are failures that say why.
type dialFunc func(ctx context.Context) (*runtime.Session, error)

// live parses the spec and checks the connection flags, and returns what
// opens a session with them and extra: a command that outlives a session
// (inspect --watch, serve) opens another with it.
func (a *app) live(f *liveFlags, extra ...runtime.Option) (*spec.Spec, dialFunc, error) {
	s, err := parseSpec(filepath.Clean(f.specPath))
	if err != nil {
		return nil, nil, err
	}
	servers, err := f.serverList()
	if err != nil {
		return nil, nil, err
	}
	if f.timeout <= 0 {
		return nil, nil, userErrorf("--timeout must be positive, got %v", f.timeout)
	}
	opts := []runtime.Option{
		runtime.WithLogger(slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelError}))),
	}
	for _, cred := range f.auth {
		if !strings.Contains(cred, ":") {
			return nil, nil, userErrorf("--auth %q: want user:password", cred)
		}
		opts = append(opts, runtime.WithAuth("digest", []byte(cred)))
	}
	tlsConf, err := f.tlsConfig()
	if err != nil {
		return nil, nil, err
	}
	if tlsConf != nil {
		opts = append(opts, runtime.WithTLS(tlsConf))
	}
	opts = append(opts, extra...)
	dial := func(ctx context.Context) (*runtime.Session, error) {
		cctx, cancel := context.WithTimeout(ctx, f.timeout)
		defer cancel()
		sess, err := runtime.Connect(cctx, servers, opts...)
		switch {
		case err == nil:
			return sess, nil
		case errors.Is(err, context.DeadlineExceeded):
			return nil, userErrorf("cannot reach ZooKeeper at %s within %v (set --servers or ZK_SERVERS)", strings.Join(servers, ","), f.timeout)
		}
		return nil, &failure{code: ExitFailure, cause: err,
			msg: fmt.Sprintf("zkgen: cannot connect to ZooKeeper at %s: %v", strings.Join(servers, ","), err)}
	}
	return s, dial, nil
}

// serverList is --servers as a list, without blanks; none is a failure.
func (f *liveFlags) serverList() ([]string, error) {
	var servers []string
	for _, srv := range strings.Split(f.servers, ",") {
		if srv = strings.TrimSpace(srv); srv != "" {
			servers = append(servers, srv)
		}
	}
	if len(servers) == 0 {
		return nil, userErrorf("--servers: no server given")
	}
	return servers, nil
}

// checkRoot fails (exit 1) when the spec's root does not exist on the
// servers: a live command pointed at the wrong cluster must not report an
// idle system.
func checkRoot(ctx context.Context, sess *runtime.Session, s *spec.Spec, servers string) error {
	return rootFailure(inspect.CheckRoot(ctx, sess, s), s, servers)
}

// rootFailure is checkRoot's failure for inspect.CheckRoot's error.
func rootFailure(err error, s *spec.Spec, servers string) error {
	if errors.Is(err, inspect.ErrRootMissing) {
		return userErrorf("the spec's root %s does not exist on %s: wrong servers, or nothing of this spec has run there yet ('zkgen provision' creates it)", s.RootPath(), servers)
	}
	if err != nil {
		return zkFailure("read root", err)
	}
	return nil
}

// zkFailure turns an error met while talking to ZooKeeper into a failure.
func zkFailure(what string, err error) error {
	return userErrorf("%s: %v", what, err)
}

// write writes s to w, as an internal failure if it cannot.
func write(w io.Writer, s string) error {
	if _, err := io.WriteString(w, s); err != nil {
		return internalErrorf("write: %v", err)
	}
	return nil
}
