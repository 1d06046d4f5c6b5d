package graph

import (
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePagesAvailable: the kernel has transparent huge pages in "always" or
// "madvise" mode. (Go's heap asks for none: under "madvise", the default
// of most distributions, it runs on 4 KiB pages unless told.)
var hugePagesAvailable = func() bool {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && !strings.Contains(string(mode), "[never]")
}()

// adviseHugePages asks for transparent huge pages over the whole 2 MiB
// pages inside [p, p+size). The memory is fresh from make: pages not yet
// touched are faulted in as huge pages; pages the allocator already
// zeroed are collapsed into huge pages at once where the kernel can
// (MADV_COLLAPSE, Linux 6.1) and by khugepaged later otherwise. Failure
// only costs speed, so errors are ignored.
func adviseHugePages(p unsafe.Pointer, size int) {
	addr := uintptr(p)
	start := (addr + hugePage - 1) &^ (hugePage - 1)
	end := (addr + uintptr(size)) &^ (hugePage - 1)
	if end <= start {
		return
	}
	mem := unsafe.Slice((*byte)(unsafe.Add(p, start-addr)), end-start)
	if unix.Madvise(mem, unix.MADV_HUGEPAGE) == nil {
		_ = unix.Madvise(mem, unix.MADV_COLLAPSE)
	}
}
