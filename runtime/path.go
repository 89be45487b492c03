package runtime

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxParamLen is the longest accepted string path parameter, in bytes.
const MaxParamLen = 1024

// Path is a znode path under construction: a base path (from the spec)
// followed by typed parameter segments. A rejected parameter makes the whole
// path invalid; handles built on an invalid path return the error from every
// method without sending anything to ZooKeeper. The zero Path is invalid.
type Path struct {
	s   string
	err error
}

// At starts a path at base, an absolute path that the generator validated.
func At(base string) Path {
	if base == "" || base[0] != '/' {
		return Path{err: fmt.Errorf("%w: base %q is not absolute", ErrInvalidPath, base)}
	}
	return Path{s: base}
}

// Lit appends a literal segment that the generator validated.
func (p Path) Lit(seg string) Path {
	if p.err != nil {
		return p
	}
	p.s = joinPath(p.s, seg)
	return p
}

// Int appends an int parameter segment.
func (p Path) Int(name string, v int) Path {
	return p.Lit(strconv.Itoa(v))
}

// Str appends a string parameter segment after checking it: it must be
// non-empty valid UTF-8 of at most MaxParamLen bytes, not "." or "..", and
// must not contain "/", NUL, control characters or the code points
// ZooKeeper refuses in paths.
func (p Path) Str(name, v string) Path {
	if p.err != nil {
		return p
	}
	if reason := checkSegment(v); reason != "" {
		shown := v
		if len(shown) > 64 {
			shown = shown[:64] + "..."
		}
		return Path{err: fmt.Errorf("%w: %s %q under %s: %s", ErrInvalidPath, name, shown, p.s, reason)}
	}
	return p.Lit(v)
}

func checkSegment(v string) string {
	switch {
	case v == "":
		return "empty"
	case v == "." || v == "..":
		return "is a relative path element"
	case len(v) > MaxParamLen:
		return fmt.Sprintf("longer than %d bytes", MaxParamLen)
	case !utf8.ValidString(v):
		return "not valid UTF-8"
	case strings.ContainsRune(v, '/'):
		return `contains "/"`
	}
	for _, r := range v {
		switch {
		case r == 0:
			return "contains NUL"
		case unicode.IsControl(r):
			return "contains a control character"
		case r >= 0xd800 && r <= 0xf8ff, r >= 0xfff0 && r <= 0xffff:
			return fmt.Sprintf("contains U+%04X, which ZooKeeper refuses in paths", r)
		}
	}
	return ""
}

// String returns the path ("" when invalid).
func (p Path) String() string {
	if p.err != nil {
		return ""
	}
	return p.s
}

// Err returns why the path is invalid, or nil.
func (p Path) Err() error {
	if p.err == nil && p.s == "" {
		return fmt.Errorf("%w: empty path", ErrInvalidPath)
	}
	return p.err
}

// joinPath joins a directory and a child name.
func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// baseName returns the last segment of path.
func baseName(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}
