// Package peers finds the peer libraries zkgen's tests and benchmarks run
// beside it: Apache Curator (Java, compiled with the JDK's javac) and kazoo
// (Python). By default it looks for Debian's packages; CURATOR_CLASSPATH,
// KAZOO_PYTHON and JAVA_HOME point it elsewhere. A peer that is not
// installed gives an error wrapping ErrNotInstalled, with an install hint.
package peers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Environment overrides.
const (
	// EnvCuratorClasspath is a complete classpath for Curator's recipes
	// (default: Debian's curator-recipes.jar, whose manifest names the
	// rest).
	EnvCuratorClasspath = "CURATOR_CLASSPATH"
	// EnvKazooPython is a python that can import kazoo (default: the
	// system's /usr/bin/python3, where Debian installs python3-kazoo).
	EnvKazooPython = "KAZOO_PYTHON"
)

const (
	debianCuratorJar = "/usr/share/java/curator-recipes.jar"
	slf4jNopJar      = "/usr/share/java/slf4j-nop.jar" // silences ZooKeeper's logging when present
	systemPython     = "/usr/bin/python3"

	// CuratorHint says how to install Curator.
	CuratorHint = "install Curator and a JDK with `apt-get install -y libcurator-recipes-java default-jdk-headless` " +
		"(or set " + EnvCuratorClasspath + " to a classpath holding curator-recipes, curator-framework, curator-client, zookeeper and guava)"
	// KazooHint says how to install kazoo.
	KazooHint = "install kazoo with `apt-get install -y python3-kazoo` (for " + systemPython + "), " +
		"or set " + EnvKazooPython + " to a python that can import kazoo"
)

// ErrNotInstalled is wrapped by the errors for a missing peer.
var ErrNotInstalled = errors.New("peer library not installed")

// JDKTool returns the path of a JDK command (java, javac): from
// $JAVA_HOME/bin when it is there, else from PATH.
func JDKTool(name string) (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if p := filepath.Join(home, "bin", name); isFile(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: no %s on PATH (or in $JAVA_HOME/bin); %s", ErrNotInstalled, name, CuratorHint)
	}
	return p, nil
}

// Curator compiles the Java source src against Curator into outDir and
// returns the java command and the classpath to run its classes with.
func Curator(src, outDir string) (java, classpath string, err error) {
	if java, err = JDKTool("java"); err != nil {
		return "", "", err
	}
	javac, err := JDKTool("javac")
	if err != nil {
		return "", "", err
	}
	cp := os.Getenv(EnvCuratorClasspath)
	if cp == "" {
		if !isFile(debianCuratorJar) {
			return "", "", fmt.Errorf("%w: %s not found; %s", ErrNotInstalled, debianCuratorJar, CuratorHint)
		}
		cp = debianCuratorJar
		if isFile(slf4jNopJar) {
			cp += string(os.PathListSeparator) + slf4jNopJar
		}
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if msg, err := exec.CommandContext(ctx, javac, "-d", outDir, "-cp", cp, src).CombinedOutput(); err != nil {
		// A classpath without Curator shows up as missing packages.
		if bytes.Contains(msg, []byte("package org.apache.curator")) {
			return "", "", fmt.Errorf("%w: javac finds no Curator classes on %q; %s", ErrNotInstalled, cp, CuratorHint)
		}
		return "", "", fmt.Errorf("javac %s: %v\n%s", src, err, msg)
	}
	return java, outDir + string(os.PathListSeparator) + cp, nil
}

// Kazoo returns a python that can import kazoo, and kazoo's version.
func Kazoo() (python, version string, err error) {
	py := os.Getenv(EnvKazooPython)
	if py == "" {
		py = systemPython
	}
	if _, err := exec.LookPath(py); err != nil {
		return "", "", fmt.Errorf("%w: no python at %s; %s", ErrNotInstalled, py, KazooHint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "-c", "from kazoo.version import __version__; import kazoo.client; print(__version__)").CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("%w: %s cannot import kazoo: %s; %s", ErrNotInstalled, py, firstLines(out, 3), KazooHint)
	}
	return py, strings.TrimSpace(string(out)), nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// firstLines returns up to n lines of b, trimmed.
func firstLines(b []byte, n int) string {
	lines := strings.SplitN(strings.TrimSpace(string(b)), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}

// Output collects a peer process's output, safely for concurrent writes.
// With a Limit it keeps only the last Limit bytes.
type Output struct {
	Limit int

	mu sync.Mutex
	b  []byte
}

// Write appends p.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b = append(o.b, p...)
	if over := len(o.b) - o.Limit; o.Limit > 0 && over > 0 {
		o.b = append(o.b[:0], o.b[over:]...)
	}
	return len(p), nil
}

// String returns what was kept.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.b)
}

// Tail returns the last n lines.
func (o *Output) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(o.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
