package runtime

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// hostileParams are string values Path.Str refuses.
var hostileParams = []string{
	"", ".", "..", "a/b", "/", "a\x00b", "tab\there", "nl\n", "\x7f", "\u0085",
	"\xff\xfe", "\ud7ff\ue000"[3:], strings.Repeat("x", MaxParamLen+1),
}

// TestTemplateMatchesWhatPathBuilds: a path built with Path from values
// matches the template of the same shape, giving the values back, and a
// value Path refuses never matches.
func TestTemplateMatchesWhatPathBuilds(t *testing.T) {
	tmpl := TemplateAt("/app/locks").Str("db").Lit("tables").Int("shard")
	if tmpl.Err() != nil || tmpl.String() != "/app/locks/{db}/tables/{shard:int}" {
		t.Fatalf("template %s: %v", tmpl, tmpl.Err())
	}
	for _, db := range []string{"users.v2", "é", "a b", "-", "...", strings.Repeat("z", MaxParamLen)} {
		for _, shard := range []int{0, -7, 42, 1 << 40} {
			p := At("/app/locks").Str("db", db).Lit("tables").Int("shard", shard)
			got, ok := tmpl.Match(p.String())
			if p.Err() != nil || !ok {
				t.Fatalf("%q: built %v, matched %v", p.String(), p.Err(), ok)
			}
			if got.Len() != 2 || got.Str(0) != db || got.Int(1) != shard || got.At(1).Value != strconv.Itoa(shard) || got.Path() != p.String() {
				t.Errorf("%q: got %v", p.String(), got)
			}
		}
	}
	for _, bad := range hostileParams {
		if _, ok := tmpl.Match("/app/locks/" + bad + "/tables/1"); ok {
			t.Errorf("Match accepts %.20q, which Path.Str refuses", bad)
		}
		if err := CheckParam(ParamString, bad); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("CheckParam accepts %.20q", bad)
		}
	}
}

func TestTemplateIntIsCanonical(t *testing.T) {
	tmpl := TemplateAt("/q").Int("n")
	for _, bad := range []string{"07", "+7", "-0", "7.0", "0x1f", " 7", "99999999999999999999999", "seven", ""} {
		if p, ok := tmpl.Match("/q/" + bad); ok {
			t.Errorf("int segment %q matched: %v", bad, p)
		}
		if CheckParam(ParamInt, bad) == nil {
			t.Errorf("CheckParam(ParamInt, %q) accepts it", bad)
		}
	}
	if p, ok := tmpl.Match("/q/-12"); !ok || p.Int(0) != -12 {
		t.Errorf("-12: %v %v", p, ok)
	}
}

func TestTemplateShape(t *testing.T) {
	tmpl := TemplateAt("/a").Str("x").Lit("l").Str("y")
	for path, want := range map[string]int{"/a": 0, "/a/1": 1, "/a/1/l": 2, "/a/1/l/2": 3} {
		if n, ok := tmpl.depth(path); !ok || n != want {
			t.Errorf("depth(%q) = %d, %v; want %d", path, n, ok, want)
		}
	}
	for _, path := range []string{"/", "/ab", "/a/1/m", "/a/1/l/2/3", "/a//l", "/b/1", "/a/", "/a/1/l/"} {
		if n, ok := tmpl.depth(path); ok {
			t.Errorf("depth(%q) = %d, want no match", path, n)
		}
		if _, ok := tmpl.Match(path); ok {
			t.Errorf("Match(%q) matched", path)
		}
	}
	if _, ok := tmpl.Match("/a/1/l"); ok {
		t.Error("a path short of an instance matched")
	}
	root := TemplateAt("/").Str("n")
	if p, ok := root.Match("/x"); !ok || p.Str(0) != "x" || root.String() != "/{n}" {
		t.Errorf("root template: %v %v %s", p, ok, root)
	}
	single := TemplateAt("/cfg/flags")
	if p, ok := single.Match("/cfg/flags"); !ok || p.Len() != 0 {
		t.Errorf("a template without parameters must match its base: %v", ok)
	}
	for _, bad := range []Template{{}, TemplateAt("rel"), TemplateAt("/a/"), TemplateAt("/a//b"), TemplateAt("/a").Lit("x/y"), TemplateAt("/a").Str(""), TemplateAt("/a").Lit("\n")} {
		if !errors.Is(bad.Err(), ErrInvalidPath) {
			t.Errorf("template %q accepted", bad.String())
		}
		if _, ok := bad.Match(bad.Base()); ok {
			t.Errorf("invalid template %q matched", bad.String())
		}
	}
	// Builders do not share segments.
	a := TemplateAt("/a").Str("x")
	b, c := a.Lit("b"), a.Lit("c")
	if b.String() != "/a/{x}/b" || c.String() != "/a/{x}/c" {
		t.Errorf("builders share state: %s %s", b, c)
	}
}

// TestTemplateInstanceOf: a path names the instance it is, or is below;
// a node on the way to the instances, or outside the template, names none.
func TestTemplateInstanceOf(t *testing.T) {
	tmpl := TemplateAt("/app").Lit("locks").Int("shard")
	for path, want := range map[string]string{
		"/app/locks/7":             "/app/locks/7",
		"/app/locks/7/_c_x-lock-1": "/app/locks/7",
		"/app/locks/-3/a/b/c":      "/app/locks/-3",
		"/app/locks/07/x":          "",
		"/app/locks":               "",
		"/app":                     "",
		"/app/queues/7":            "",
		"/application/locks/7":     "",
		"/":                        "",
	} {
		got, ok := tmpl.instanceOf(path)
		if ok != (want != "") || got != want {
			t.Errorf("instanceOf(%q) = %q, %v; want %q", path, got, ok, want)
		}
	}
	for tmpl, cases := range map[string]map[string]string{
		"/cfg": {"/cfg": "/cfg", "/cfg/a/b": "/cfg", "/cfgx": "", "/": ""},
		"/":    {"/": "/", "/a": "/", "/a/b": "/"},
	} {
		for path, want := range cases {
			got, ok := TemplateAt(tmpl).instanceOf(path)
			if ok != (want != "") || got != want {
				t.Errorf("%s: instanceOf(%q) = %q, %v; want %q", tmpl, path, got, ok, want)
			}
		}
	}
	root := TemplateAt("/").Str("name")
	if got, ok := root.instanceOf("/svc/x/y"); !ok || got != "/svc" {
		t.Errorf("/{name}: instanceOf(/svc/x/y) = %q, %v", got, ok)
	}
}
