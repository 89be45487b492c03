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

// Int appends an int parameter segment, in the form CheckParam accepts
// for ParamInt (strconv.Itoa's).
func (p Path) Int(name string, v int) Path {
	return p.Lit(strconv.Itoa(v))
}

// Str appends a string parameter segment after checking it with
// CheckParam(ParamString, v): it must be non-empty valid UTF-8 of at most
// MaxParamLen bytes, not "." or "..", and must not contain "/", NUL,
// control characters or the code points ZooKeeper refuses in paths.
func (p Path) Str(name, v string) Path {
	if p.err != nil {
		return p
	}
	if reason := checkSegment(v); reason != "" {
		return Path{err: paramError(name, v, " under "+p.s, reason)}
	}
	return p.Lit(v)
}

// paramError is the ErrInvalidPath of parameter name's value v (where
// says where, or is empty).
func paramError(name, v, where, reason string) error {
	shown := v
	if len(shown) > 64 {
		shown = shown[:64] + "..."
	}
	return fmt.Errorf("%w: %s %q%s: %s", ErrInvalidPath, name, shown, where, reason)
}

// ParamKind is the type of a path parameter: what values its segment may
// hold.
type ParamKind uint8

// The kinds of path parameters.
const (
	// ParamString is a string parameter (Path.Str, Template.Str).
	ParamString ParamKind = iota
	// ParamInt is an int parameter (Path.Int, Template.Int): a segment in
	// strconv.Itoa's form, so that each int has one path.
	ParamInt
)

// String returns "string" or "int", the spec's names of the kinds.
func (k ParamKind) String() string {
	if k == ParamInt {
		return "int"
	}
	return "string"
}

// CheckParam reports why the path segment v cannot be the value of a
// parameter of kind k, or nil when it can. It is the one rule for
// parameters: Path builds only segments it accepts, Template.Match matches
// only those, and zkgen inspect lists only those as instances. A string
// value is refused when Path.Str refuses it; an int value unless it is an
// int in strconv.Itoa's form ("7", "-7"; not "07", "+7" or "7.0"). The
// error wraps ErrInvalidPath.
func CheckParam(k ParamKind, v string) error {
	reason := checkSegment(v)
	if reason == "" && k == ParamInt {
		if n, err := strconv.Atoi(v); err != nil || strconv.Itoa(n) != v {
			reason = "not an int in canonical form"
		}
	}
	if reason != "" {
		return paramError(k.String()+" parameter", v, "", reason)
	}
	return nil
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
