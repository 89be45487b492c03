package zktest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Environment variables consulted by the harness.
const (
	// EnvServers names the variable holding a comma-separated list of
	// host:port addresses of an already running ZooKeeper. When it is set,
	// Start and StartProcess return a Server that points at it instead of
	// launching a process.
	EnvServers = "ZK_SERVERS"
	// EnvClasspath names the variable holding a complete Java classpath for
	// the ZooKeeper server. It takes precedence over EnvHome and the Debian
	// default.
	EnvClasspath = "ZK_CLASSPATH"
	// EnvHome names the variable holding the root of an unpacked ZooKeeper
	// release (the directory containing lib/). It takes precedence over the
	// Debian default.
	EnvHome = "ZOOKEEPER_HOME"
)

// DebianJar is where Debian's zookeeper package installs the server jar. Its
// manifest Class-Path names the dependencies, so it is enough on its own.
const DebianJar = "/usr/share/java/zookeeper.jar"

// slf4jBindings are Debian jars tried, in order, as the logging backend of a
// server started from DebianJar. slf4j-simple writes to stderr, which the
// harness captures in the server's log file.
var slf4jBindings = []string{
	"/usr/share/java/slf4j-simple.jar",
	"/usr/share/java/slf4j-nop.jar",
}

// debianNetty are Debian jars the Netty connection factory (a TLS client
// port, WithTLS) needs but zookeeper.jar's manifest does not name; they are
// added to the classpath when present.
var debianNetty = []string{
	"/usr/share/java/netty-codec.jar",
	"/usr/share/java/netty-resolver.jar",
}

// installHint tells a reader how to get a usable ZooKeeper.
const installHint = "install it with `apt-get install -y zookeeper` (Debian/Ubuntu; needs a JRE), " +
	"or set " + EnvHome + " / " + EnvClasspath + " to a ZooKeeper release, " +
	"or set " + EnvServers + "=host:port[,host:port...] to use running servers"

// ErrNotInstalled is returned (wrapped) by StartProcess and
// StartEnsembleProcess when java or the ZooKeeper jars cannot be found.
// Start and StartEnsemble turn it into tb.Skip, or tb.Fatal when CI is set.
var ErrNotInstalled = errors.New("zktest: ZooKeeper is not installed")

// install is a located Java runtime plus the classpath of a ZooKeeper server.
type install struct {
	java      string
	classpath string
}

// findInstall locates java and the ZooKeeper classpath from the environment.
func findInstall() (install, error) {
	var in install
	java, err := findJava()
	if err != nil {
		return in, err
	}
	in.java = java
	switch {
	case os.Getenv(EnvClasspath) != "":
		in.classpath, err = classpathFromEnv(os.Getenv(EnvClasspath))
	case os.Getenv(EnvHome) != "":
		in.classpath, err = classpathFromHome(os.Getenv(EnvHome))
	default:
		in.classpath, err = debianClasspath()
	}
	return in, err
}

// findJava finds the java binary: $JAVA_HOME/bin/java, else java on PATH.
func findJava() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if p := filepath.Join(home, "bin", "java"); isFile(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w: no java on PATH (or in $JAVA_HOME/bin): %s", ErrNotInstalled, installHint)
	}
	return p, nil
}

// classpathFromEnv checks each entry of the classpath given in EnvClasspath.
func classpathFromEnv(cp string) (string, error) {
	for _, e := range filepath.SplitList(cp) {
		if strings.HasSuffix(e, "*") {
			e = filepath.Dir(e)
		}
		if _, err := os.Stat(e); err != nil {
			return "", fmt.Errorf("%w: %s entry %q: %v; %s", ErrNotInstalled, EnvClasspath, e, err, installHint)
		}
	}
	return cp, nil
}

// classpathFromHome is the classpath of a ZooKeeper unpacked at home
// (EnvHome), which must hold a zookeeper jar.
func classpathFromHome(home string) (string, error) {
	found := false
	for _, pat := range []string{"lib/zookeeper-*.jar", "zookeeper-*.jar", "lib/zookeeper.jar", "zookeeper.jar"} {
		if m, _ := filepath.Glob(filepath.Join(home, pat)); len(m) > 0 {
			found = true
			break
		}
	}
	if !found {
		return "", fmt.Errorf("%w: no zookeeper jar under %s=%s; %s", ErrNotInstalled, EnvHome, home, installHint)
	}
	return strings.Join([]string{
		filepath.Join(home, "lib", "*"),
		filepath.Join(home, "*"),
		filepath.Join(home, "conf"),
	}, string(os.PathListSeparator)), nil
}

// debianClasspath is the classpath of Debian's zookeeper package: its jar,
// an SLF4J binding and Netty.
func debianClasspath() (string, error) {
	if !isFile(DebianJar) {
		return "", fmt.Errorf("%w: %s not found; %s", ErrNotInstalled, DebianJar, installHint)
	}
	cp := []string{DebianJar}
	for _, b := range slf4jBindings {
		if isFile(b) {
			cp = append(cp, b)
			break
		}
	}
	for _, j := range debianNetty {
		if isFile(j) {
			cp = append(cp, j)
		}
	}
	return strings.Join(cp, string(os.PathListSeparator)), nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// InCI reports whether the CI environment variable is set to a true value
// ("true", "1", ...). Under CI a missing ZooKeeper is a test failure rather
// than a skip.
func InCI() bool {
	v, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && v
}

// externalServers returns the addresses from EnvServers, or nil.
func externalServers() []string {
	var out []string
	for _, s := range strings.Split(os.Getenv(EnvServers), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// handleStartErr ends the test for a failed start: a missing installation is
// a skip (a fatal error under CI), anything else is fatal.
func handleStartErr(tb testing.TB, err error) {
	tb.Helper()
	if errors.Is(err, ErrNotInstalled) && !InCI() {
		tb.Skip(err.Error())
	}
	tb.Fatal(err.Error())
}

// Shared is for tests that use a server started once in TestMain with
// StartProcess. It returns s when err is nil; otherwise it ends the test the
// way Start would have: tb.Skip for ErrNotInstalled outside CI, tb.Fatal
// otherwise.
func Shared(tb testing.TB, s *Server, err error) *Server {
	tb.Helper()
	if err == nil && s == nil {
		err = errors.New("zktest: no shared server (TestMain did not call StartProcess?)")
	}
	if err != nil {
		handleStartErr(tb, err)
	}
	return s
}
