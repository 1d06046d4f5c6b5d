//go:build !(amd64 || arm64) || purego

package gemm

import "unsafe"

// Without assembly (architectures other than amd64 and arm64, or -tags
// purego) every product runs the Go micro-kernel.
const bestPath = pathGo

func dot4F32(k int, x, b unsafe.Pointer, ldb int, out unsafe.Pointer) { panic("unreachable") }

// caches reports nothing here: the blocks keep kernelTable's sizes.
func caches() cacheSizes { return cacheSizes{} }
