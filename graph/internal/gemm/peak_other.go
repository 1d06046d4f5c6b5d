//go:build !amd64 || purego

package gemm

func peakLoops() []peakLoop { return nil }
