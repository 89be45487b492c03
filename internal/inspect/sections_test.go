package inspect

import (
	"reflect"
	"testing"
)

// Every state section of Resource is rendered and aged: section() returns
// it when it is the one set.
func TestSections(t *testing.T) {
	sec := reflect.TypeFor[section]()
	n := 0
	for f := range reflect.TypeFor[Resource]().Fields() {
		if !f.Type.Implements(sec) {
			continue
		}
		n++
		var r Resource
		v := reflect.New(f.Type.Elem())
		reflect.ValueOf(&r).Elem().FieldByIndex(f.Index).Set(v)
		if got := r.section(); got == nil || reflect.ValueOf(got).Pointer() != v.Pointer() {
			t.Errorf("Resource.%s is set but section() returns %v", f.Name, got)
		}
	}
	if n == 0 {
		t.Fatal("Resource has no sections")
	}
}
