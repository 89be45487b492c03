package runtime_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/zkgen/zkgen/runtime"
)

// The values a handle hands out, built as a unit test might build them
// (&runtime.Lease{}): every exported method — found by reflection, so a
// method added later is covered too — returns without panicking, and every
// error it returns wraps ErrNotHeld; a zero value is not held: Held and
// Owns say false, Lost is closed, Context is cancelled.
func TestZeroValuesFailWithoutPanic(t *testing.T) {
	values := []any{
		&runtime.Lease{},
		&runtime.Leadership[string]{},
		&runtime.Membership[string]{},
		&runtime.Assignment[string]{},
		&runtime.Delivery[string]{},
		&runtime.TTLLease{},
	}
	for _, v := range values {
		rv := reflect.ValueOf(v)
		name := rv.Type().Elem().Name()
		for i := range rv.NumMethod() {
			m := rv.Type().Method(i)
			t.Run(name+"."+m.Name, func(t *testing.T) {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panic: %v", p)
					}
				}()
				out := rv.Method(i).Call(zeroArgs(m.Type))
				checkZeroResults(t, m.Name, out)
			})
		}
	}
}

// zeroArgs returns arguments for a method of type mt (receiver first): a
// background context for a context, 0 for an int; a variadic gets none.
func zeroArgs(mt reflect.Type) []reflect.Value {
	var args []reflect.Value
	n := mt.NumIn()
	if mt.IsVariadic() {
		n--
	}
	ctxType := reflect.TypeFor[context.Context]()
	for i := 1; i < n; i++ {
		in := mt.In(i)
		if in == ctxType {
			args = append(args, reflect.ValueOf(context.Background()))
			continue
		}
		args = append(args, reflect.Zero(in))
	}
	return args
}

// checkZeroResults checks what a zero value's method returned.
func checkZeroResults(t *testing.T, method string, out []reflect.Value) {
	errType := reflect.TypeFor[error]()
	for _, o := range out {
		switch {
		case o.Type() == errType:
			if err, _ := o.Interface().(error); !errors.Is(err, runtime.ErrNotHeld) {
				t.Errorf("%s returned %v, want an error wrapping ErrNotHeld", method, err)
			}
		case method == "Held" || method == "Owns":
			if o.Bool() {
				t.Errorf("%s = true on a zero value", method)
			}
		case method == "Lost":
			select {
			case <-o.Interface().(<-chan struct{}):
			default:
				t.Errorf("Lost is not closed on a zero value")
			}
		case method == "Context":
			ctx := o.Interface().(context.Context)
			if ctx.Err() == nil || !errors.Is(context.Cause(ctx), runtime.ErrNotHeld) {
				t.Errorf("Context of a zero value: err %v, cause %v", ctx.Err(), context.Cause(ctx))
			}
		}
	}
}
