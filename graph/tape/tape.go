package tape

import (
	"reflect"
	"unsafe"

	G "gorgonia.org/gorgonia"
)

// runInPlace returns a function that runs vm's whole tape in the calling
// goroutine, or nil when vm is not the TapeMachine of Gorgonia v0.9.18
// this was written against (then the caller uses RunAll).
//
// Why: TapeMachine.RunAll locks its OS thread, starts the tape on a new
// goroutine and waits for it on channels (room for batched cgo and CUDA
// calls, which gptg does not make). That costs two OS-thread hand-offs per
// run, and the tape usually lands on the other core, away from the caches
// the previous run warmed: measured, a batch-1 forward pass of the seed
// model takes 200 µs through RunAll and 136 µs run in place.
//
// How: the machine's exported method Run(fragment) executes a list of its
// instructions in the caller's goroutine and then binds every node to its
// value, as RunAll's instructions do one by one; its argument type is
// unexported, so it is called through reflection with the machine's whole
// program (Prog().instructions, read with unsafe because the field is
// unexported). For a CPU graph without dual values — what Compile builds —
// that is RunAll minus the goroutine: TestRunInPlaceMatchesRunAll checks
// both give the same bits.
func runInPlace(vm G.VM) func() error {
	m := reflect.ValueOf(vm)
	prog, run := m.MethodByName("Prog"), m.MethodByName("Run")
	if !prog.IsValid() || !run.IsValid() || prog.Type().NumIn() != 0 || prog.Type().NumOut() != 1 {
		return nil
	}
	p := prog.Call(nil)[0]
	if p.Kind() != reflect.Pointer || p.IsNil() || p.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := p.Elem().FieldByName("instructions")
	rt := run.Type()
	errType := reflect.TypeFor[error]()
	if !f.IsValid() || rt.NumIn() != 1 || rt.In(0) != f.Type() || rt.NumOut() != 1 || rt.Out(0) != errType {
		return nil
	}
	// The field itself, made readable (reflect refuses to pass a value read
	// from an unexported field); the instructions never change after Compile.
	args := []reflect.Value{reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()}
	return func() error {
		if err, _ := run.Call(args)[0].Interface().(error); err != nil {
			return err
		}
		return nil
	}
}
