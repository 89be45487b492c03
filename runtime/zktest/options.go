package zktest

import (
	"fmt"
	"strings"
	"time"
)

// Default settings. The tick is small so that sessions can be short: the
// server only grants session timeouts between MinSessionTimeout and
// MaxSessionTimeout, and ZooKeeper's own defaults derive both from the tick.
const (
	DefaultTickTime          = 200 * time.Millisecond
	DefaultMinSessionTimeout = 2 * DefaultTickTime
	DefaultMaxSessionTimeout = 60 * time.Second
	DefaultHeapMB            = 128
	DefaultStartTimeout      = 60 * time.Second
)

// config is what the options build.
type config struct {
	tick         time.Duration
	minSession   time.Duration
	maxSession   time.Duration
	heapMB       int
	startTimeout time.Duration
	jvmArgs      []string
	extra        [][2]string
	quorumFaults bool
	reconfig     bool       // WithReconfig
	tls          *TLSCerts  // WithTLS
	clientAuth   ClientAuth // WithTLS
}

func defaultConfig() config {
	return config{
		tick:         DefaultTickTime,
		minSession:   DefaultMinSessionTimeout,
		maxSession:   DefaultMaxSessionTimeout,
		heapMB:       DefaultHeapMB,
		startTimeout: DefaultStartTimeout,
	}
}

func buildConfig(opts []Option) (config, error) {
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	switch {
	case c.tick < time.Millisecond:
		return c, fmt.Errorf("zktest: tick time %v is below 1ms", c.tick)
	case c.minSession <= 0 || c.maxSession < c.minSession:
		return c, fmt.Errorf("zktest: bad session timeouts min=%v max=%v", c.minSession, c.maxSession)
	case c.heapMB < 16:
		return c, fmt.Errorf("zktest: heap of %d MB is too small", c.heapMB)
	case c.startTimeout <= 0:
		return c, fmt.Errorf("zktest: start timeout %v must be positive", c.startTimeout)
	}
	return c, checkTLSConfig(c)
}

// Option configures a server or ensemble started by this package.
type Option func(*config)

// WithTickTime sets ZooKeeper's tickTime, its basic time unit (default
// DefaultTickTime). Ensembles derive initLimit and syncLimit from it.
func WithTickTime(d time.Duration) Option {
	return func(c *config) { c.tick = d }
}

// WithSessionTimeouts sets the bounds within which the server negotiates a
// client's requested session timeout (defaults DefaultMinSessionTimeout and
// DefaultMaxSessionTimeout). Clients asking for less get min, for more max.
func WithSessionTimeouts(min, max time.Duration) Option {
	return func(c *config) { c.minSession, c.maxSession = min, max }
}

// WithHeapMB sets the JVM's maximum heap in MiB (default DefaultHeapMB).
func WithHeapMB(mb int) Option {
	return func(c *config) { c.heapMB = mb }
}

// WithStartTimeout bounds how long a start waits for the server to serve
// (default DefaultStartTimeout).
func WithStartTimeout(d time.Duration) Option {
	return func(c *config) { c.startTimeout = d }
}

// WithJVMArgs appends arguments to the java command line, before the main
// class; for example "-Dzookeeper.extendedTypesEnabled=true".
func WithJVMArgs(args ...string) Option {
	return func(c *config) { c.jvmArgs = append(c.jvmArgs, args...) }
}

// WithConfig adds a key=value line to the generated zoo.cfg, after the
// harness's own lines. Unknown keys become "zookeeper."+key system
// properties, so WithConfig("extendedTypesEnabled", "true") enables TTL
// nodes.
func WithConfig(key, value string) Option {
	return func(c *config) { c.extra = append(c.extra, [2]string{key, value}) }
}

// WithQuorumFaults makes StartEnsemble route each server's quorum and
// election traffic to each other server through a relay of its own (one per
// ordered pair of servers and per port), so that Ensemble.Partition,
// Isolate and Heal can cut servers off from each other while their clients
// stay connected. Relaying costs a little latency; without this option
// servers talk to each other directly and those methods return an error.
// Start and StartProcess ignore it. Each server's zoo.cfg lists the others
// at its own relays, so dynamic reconfiguration, which would spread one
// server's view to the rest, must stay off (reconfigEnabled, off by
// default).
//
// The option also lowers ZooKeeper's maxNotificationInterval, the longest
// pause between a cut-off server's attempts to rejoin, from 60s to five
// ticks or one second, whichever is longer, so that a healed server rejoins
// promptly.
func WithQuorumFaults() Option {
	return func(c *config) { c.quorumFaults = true }
}

// rejoinInterval is the maxNotificationInterval of an ensemble with quorum
// faults.
func rejoinInterval(tick time.Duration) time.Duration {
	return max(5*tick, time.Second)
}

// WithTTLNodes lets the server create TTL nodes (the system property
// zookeeper.extendedTypesEnabled=true; without it CreateTTL is refused with
// error -6) and sets how often it looks for expired TTL nodes and empty
// containers (znode.container.checkIntervalMs, ZooKeeper's default one
// minute): a TTL node is removed within checkInterval after its TTL has
// passed. Tests use a short interval, such as 100ms.
func WithTTLNodes(checkInterval time.Duration) Option {
	return WithJVMArgs("-Dzookeeper.extendedTypesEnabled=true",
		fmt.Sprintf("-Dznode.container.checkIntervalMs=%d", max(checkInterval.Milliseconds(), 1)))
}

// WithFourLetterWords sets the server's 4lw.commands.whitelist to words
// instead of "*" (every command). ruok is always added: the harness's
// readiness check sends it. ZooKeeper 3.8 answers srvr whatever the
// whitelist says (the harness's standalone check reads its Mode line); a
// word left out is answered "<word> is not executed because it is not in
// the whitelist."
func WithFourLetterWords(words ...string) Option {
	return WithConfig("4lw.commands.whitelist", strings.Join(append([]string{"ruok"}, words...), ","))
}

// WithJuteMaxBuffer sets the server's jute.maxbuffer (the system property;
// ZooKeeper's default is 0xfffff, 1 MiB less a byte): the server drops the
// connection of a client whose request frame is longer than n bytes.
func WithJuteMaxBuffer(n int) Option {
	return WithJVMArgs(fmt.Sprintf("-Djute.maxbuffer=%d", n))
}
