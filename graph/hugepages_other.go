//go:build !linux

package graph

import "unsafe"

// hugePagesAvailable: transparent huge pages are a Linux feature.
const hugePagesAvailable = false

func adviseHugePages(p unsafe.Pointer, size int) {}
