// PulseAudio's simple, blocking client API (apt: libpulse-dev), used by NearbyPulseAudio.
#include <pulse/simple.h>
#include <pulse/error.h>
