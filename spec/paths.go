package spec

import (
	"fmt"
	"strconv"
	"strings"
)

// splitPath checks the shape shared by the root and resource paths (absolute,
// no trailing slash, no empty, "." or ".." segments) and returns the segments
// after the leading "/". msg says what is wrong, or is "".
func splitPath(s string) (segs []string, msg string) {
	switch {
	case !strings.HasPrefix(s, "/"):
		return nil, fmt.Sprintf(`must be absolute (start with "/"), got %s`, quote(s))
	case s == "/":
		return nil, `must name a node below "/", got "/"`
	case strings.HasSuffix(s, "/"):
		return nil, fmt.Sprintf(`must not end with "/", got %s`, quote(s))
	}
	segs = strings.Split(s[1:], "/")
	for _, seg := range segs {
		switch seg {
		case "":
			return nil, fmt.Sprintf("must not contain empty segments (//), got %s", quote(s))
		case ".", "..":
			return nil, fmt.Sprintf(`must not contain "." or ".." segments, got %s`, quote(s))
		}
	}
	return segs, ""
}

// literalProblem says what is wrong with a literal path segment, or "".
func literalProblem(seg string) string {
	for _, r := range seg {
		if r <= ' ' || r > '~' || r == '{' || r == '}' {
			return fmt.Sprintf("segment %s contains %s; literal segments are printable ASCII without spaces, '{' or '}'", quote(seg), quote(string(r)))
		}
	}
	return ""
}

// parsePath parses a resource path into segments and parameters. A
// parameter is a whole segment {name:int} or {name:string}; its name is
// snake_case, distinct within the path, and usable as a Go argument name.
// On a problem it returns msg and, when the problem is one segment with a
// brace (a parameter), the byte offset of that segment in s; else at is -1.
func parsePath(s string) (segs []Segment, params []*Param, msg string, at int) {
	parts, msg := splitPath(s)
	if msg != "" {
		return nil, nil, msg, -1
	}
	segs = make([]Segment, 0, len(parts))
	seen := map[string]string{} // Go name -> name
	next := 1                   // offset of the next part in s
	for _, part := range parts {
		start := next
		next += len(part) + 1
		if !strings.HasPrefix(part, "{") || !strings.HasSuffix(part, "}") {
			if strings.ContainsAny(part, "{}") {
				return nil, nil, fmt.Sprintf("segment %s: a parameter must be a whole segment like {name:int} or {name:string}", quote(part)), start
			}
			if msg := literalProblem(part); msg != "" {
				return nil, nil, msg, -1
			}
			segs = append(segs, Segment{Literal: part})
			continue
		}
		prm, msg := parseParam(part)
		if msg != "" {
			return nil, nil, msg, start
		}
		if other, dup := seen[prm.GoName]; dup {
			if other == prm.Name {
				return nil, nil, fmt.Sprintf("parameter %s appears twice; parameter names must be distinct", quote(prm.Name)), start
			}
			return nil, nil, fmt.Sprintf("parameters %s and %s both become Go argument %s", quote(other), quote(prm.Name), prm.GoName), start
		}
		seen[prm.GoName] = prm.Name
		segs = append(segs, Segment{Param: prm})
		params = append(params, prm)
	}
	return segs, params, "", -1
}

// parseParam parses a "{name:type}" segment.
func parseParam(seg string) (*Param, string) {
	name, typ, ok := strings.Cut(seg[1:len(seg)-1], ":")
	switch {
	case !ok || strings.ContainsAny(name+typ, "{}"):
		return nil, fmt.Sprintf("parameter %s must be {name:int} or {name:string}", quote(seg))
	case !isSnake(name):
		return nil, fmt.Sprintf("parameter name %s must be snake_case ([a-z][a-z0-9]*(_[a-z0-9]+)*)", quote(name))
	case typ != "int" && typ != "string":
		return nil, fmt.Sprintf("parameter %s has type %s; use int or string", quote(name), quote(typ))
	}
	goName := LowerCamelCase(name)
	if what := identClash(goName); what != "" {
		return nil, fmt.Sprintf("parameter %s would become the Go argument %s, %s; rename it", quote(name), goName, what)
	}
	return &Param{Name: name, GoName: goName, Type: typ}, ""
}

// isIntLiteral reports whether a literal segment is what an int parameter
// can produce (strconv.Itoa of some int).
func isIntLiteral(s string) bool {
	v, err := strconv.Atoi(s)
	return err == nil && strconv.Itoa(v) == s
}
