#ifndef SWIFT_NEARBY_CDBUS_SHIM_H
#define SWIFT_NEARBY_CDBUS_SHIM_H

#include <dbus/dbus.h>

#endif
