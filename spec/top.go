package spec

import (
	"path"
	"strings"
)

// packageName decodes package: a lower-case Go identifier that is neither a
// keyword nor a predeclared name.
func (p *parser) packageName(e entry) string {
	s, ok := p.str(e.val, "package")
	switch {
	case !ok:
		return ""
	case !packageRE.MatchString(s):
		p.errorf(e.val, "package", "must be a lower-case Go identifier ([a-z][a-z0-9_]*), got %s", quote(s))
	case goKeywords[s]:
		p.errorf(e.val, "package", "%s is a Go keyword", quote(s))
	case goPredeclared[s]:
		p.errorf(e.val, "package", "%s is a predeclared Go identifier", quote(s))
	default:
		return s
	}
	return ""
}

// output decodes output: a clean, relative, slash-separated path of a .go
// file that the go tool builds everywhere (not a test, not ignored, not
// constrained to one GOOS or GOARCH by its name).
func (p *parser) output(e entry) string {
	s, ok := p.str(e.val, "output")
	if !ok {
		return ""
	}
	base := path.Base(s)
	var msg string
	switch {
	case s == "":
		msg = "must be a file path ending in .go"
	case strings.Contains(s, `\`):
		msg = "must use forward slashes, got " + quote(s)
	case strings.HasPrefix(s, "/") || len(s) >= 2 && s[1] == ':':
		msg = "must be relative to the spec file, got " + quote(s)
	case path.Clean(s) != s:
		msg = "must be a clean path; did you mean " + quote(path.Clean(s)) + "?"
	case !strings.HasSuffix(s, ".go"):
		msg = "must end in .go, got " + quote(s)
	case strings.HasSuffix(s, "_test.go"):
		msg = "must not be a _test.go file, got " + quote(s)
	case base[0] == '.' || base[0] == '_':
		msg = "file name " + quote(base) + " starts with " + quote(base[:1]) + ", so the go tool would ignore it"
	case buildConstrained(base):
		msg = "file name " + quote(base) + " ends in a GOOS or GOARCH suffix, so the go tool would build it only there"
	default:
		return s
	}
	p.errorf(e.val, "output", "%s", msg)
	return ""
}

// OutputOutside reports whether the spec's output path leaves the spec's
// directory (it starts with "../"). Parse accepts such a path; zkgen
// refuses it unless told to allow it (--allow-outside), so that a spec
// cannot write elsewhere without the person running zkgen saying so.
func (s *Spec) OutputOutside() bool {
	return s.Output == ".." || strings.HasPrefix(s.Output, "../")
}

var goosArch = setOf("aix", "android", "darwin", "dragonfly", "freebsd",
	"hurd", "illumos", "ios", "js", "linux", "nacl", "netbsd", "openbsd",
	"plan9", "solaris", "wasip1", "windows", "zos", "386", "amd64",
	"amd64p32", "arm", "armbe", "arm64", "arm64be", "loong64", "mips",
	"mipsle", "mips64", "mips64le", "mips64p32", "mips64p32le", "ppc",
	"ppc64", "ppc64le", "riscv", "riscv64", "s390", "s390x", "sparc",
	"sparc64", "wasm")

// buildConstrained reports whether a file name like x_linux.go or
// x_linux_amd64.go restricts the file to one platform.
func buildConstrained(base string) bool {
	parts := strings.Split(strings.TrimSuffix(base, ".go"), "_")
	return len(parts) > 1 && goosArch[parts[len(parts)-1]]
}

// root decodes root: an absolute literal path, not /zookeeper or below.
// "/" is the same as no root. ok is false when root is invalid.
func (p *parser) root(e entry) (string, bool) {
	s, ok := p.str(e.val, "root")
	if !ok {
		return "", false
	}
	if s == "/" {
		return "", true
	}
	segs, msg := splitPath(s)
	for _, seg := range segs {
		if msg != "" {
			break
		}
		if strings.ContainsAny(seg, "{}") {
			msg = "must not contain parameters; {name:type} segments belong in resource paths"
		} else {
			msg = literalProblem(seg)
		}
	}
	if msg == "" && segs[0] == "zookeeper" {
		msg = "must not be /zookeeper or below it; ZooKeeper reserves that subtree"
	}
	if msg != "" {
		p.errorf(e.val, "root", "%s", msg)
		return "", false
	}
	return s, true
}
