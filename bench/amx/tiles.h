// What both AMX probes (amxprobe.c, amxnum.c) need before their first tile
// instruction: LDTILECFG's configuration and Linux's permission to use the
// tile state.
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

// The tile configuration of LDTILECFG (palette 1): per tile its rows and
// bytes a row.
struct tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};

// request_tiles asks Linux (5.16 and later) for the tile state, without
// which the first tile instruction kills the process (SIGILL): 0 when
// granted, else -1 with errno set.
static int request_tiles(void) {
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) ? -1 : 0;
}
