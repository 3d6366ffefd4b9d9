"""An L2CAP LE credit-based channel through the kernel's Bluetooth sockets, checked against an echo server.

Usage: bluez_l2cap_echo.py ADDRESS public|random PSM TOTAL [SDU]
Connects a SOCK_SEQPACKET BTPROTO_L2CAP socket to ADDRESS (LE, of the given type) on PSM, sends TOTAL bytes in
SDUs of SDU bytes (default 500), reads the echo as a byte stream (the peer may merge SDUs) and compares it.
Prints "CONNECTED <seconds>" and "ECHO <bytes> intact <seconds> <bytes/s>"; exit 0 only when the echo is intact.
With TOTAL 0 it only opens the channel and closes it again.

Runs inside the guest of scripts/with-bluez-vm.sh with Debian's /usr/bin/python3 (its socket module has
AF_BLUETOOTH). Python's own L2CAP address tuple has no address type, so bind and connect go through libc with
a hand-built struct sockaddr_l2.
"""
import ctypes
import os
import signal
import socket
import struct
import sys
import time

BDADDR_LE_PUBLIC = 1
BDADDR_LE_RANDOM = 2


def sockaddr_l2(address, psm, address_type):
    # struct sockaddr_l2 { sa_family_t family; __le16 psm; bdaddr_t bdaddr; __le16 cid; __u8 bdaddr_type; } (14 B)
    bdaddr = bytes(reversed(bytes.fromhex(address.replace(':', ''))))
    return struct.pack('<HH6sHBx', socket.AF_BLUETOOTH, psm, bdaddr, 0, address_type)


def call(function, fd, address):
    buffer = ctypes.create_string_buffer(address, len(address))
    if function(fd, buffer, len(address)) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def main():
    address, kind, psm, total = sys.argv[1], sys.argv[2], int(sys.argv[3], 0), int(sys.argv[4])
    sdu = int(sys.argv[5]) if len(sys.argv) > 5 else 500
    libc = ctypes.CDLL(None, use_errno=True)
    signal.alarm(60)  # a hung connect or read must not outlive the guest's own timeout

    sock = socket.socket(socket.AF_BLUETOOTH, socket.SOCK_SEQPACKET, socket.BTPROTO_L2CAP)
    call(libc.bind, sock.fileno(), sockaddr_l2('00:00:00:00:00:00', 0, BDADDR_LE_PUBLIC))
    started = time.monotonic()
    call(libc.connect, sock.fileno(),
         sockaddr_l2(address, psm, BDADDR_LE_RANDOM if kind == 'random' else BDADDR_LE_PUBLIC))
    print(f'CONNECTED {time.monotonic() - started:.2f}', flush=True)
    if total == 0:
        sock.close()
        return

    payload = bytes((i * 7 + 3) & 0xFF for i in range(total))
    received = bytearray()
    started = time.monotonic()
    sent = 0
    while sent < total:
        sock.send(payload[sent:sent + sdu])
        sent += sdu
        while len(received) < min(sent, total) - 4 * sdu:
            received += sock.recv(65535)
    while len(received) < total:
        chunk = sock.recv(65535)
        if not chunk:
            break
        received += chunk
    seconds = time.monotonic() - started
    intact = bytes(received) == payload
    print(f'ECHO {len(received)} {"intact" if intact else "CORRUPT"} {seconds:.2f} {total / seconds:.0f}', flush=True)
    sock.close()
    sys.exit(0 if intact else 1)


if __name__ == '__main__':
    main()
