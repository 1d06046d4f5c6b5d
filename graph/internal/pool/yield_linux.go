package pool

import "syscall"

// yield gives the core to another thread for a moment (sched_yield): a
// spinning worker on a machine with more busy threads than cores must not
// hold a core that the thread it waits for could use.
func yield() { syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
