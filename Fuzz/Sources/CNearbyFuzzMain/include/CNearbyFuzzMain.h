// The process entry point of the nearby-fuzz executable (see entry.c).
#pragma once

int nearby_fuzz_main(int argc, char **argv);
