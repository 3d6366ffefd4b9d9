// SwiftPM links an executable target with `--defsym main=<module>_main`, so libFuzzer's own `main` is never used.
// This provides that symbol and hands the process to libFuzzer's driver, which calls LLVMFuzzerInitialize and
// LLVMFuzzerTestOneInput (both defined in Swift with @_cdecl, Fuzz/Sources/NearbyFuzz/Entry.swift).
#include <stddef.h>
#include <stdint.h>

#include "CNearbyFuzzMain.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

int nearby_fuzz_main(int argc, char **argv) {
    return LLVMFuzzerRunDriver(&argc, &argv, LLVMFuzzerTestOneInput);
}
