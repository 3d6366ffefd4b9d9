"""A TCP relay for the link-safety tests: it stands between a `nearby send` and the advertiser it sends to, and
breaks or slows the link on purpose.

Usage: tcp_relay.py --target PORT [--cut-at BYTES]... [--refuse-after-cuts] [--rate BYTES_PER_SECOND]

Listens on 127.0.0.1 (a free port, printed as `READY <port>`) and bridges every accepted connection to
127.0.0.1:TARGET. It counts the bytes it forwards towards the target, over all connections together. Each
`--cut-at` is such a count: when the forwarded bytes reach it, the connection under way is reset (RST, both
sides: SO_LINGER 0, then close) and `CUT <n> <forwarded>` is printed. With `--refuse-after-cuts` the relay stops
listening after the last cut (the peer never comes back). `--rate` throttles both directions to that many bytes
per second. When its standard input closes (or on SIGTERM) it prints `FORWARDED <bytes>` and exits. Standard
library only.
"""
import argparse
import signal
import socket
import struct
import sys
import threading
import time

CHUNK = 65536


class Relay:
    def __init__(self, target, cuts, refuse_after_cuts, rate):
        self.target = target
        self.cuts = sorted(cuts)
        self.refuse_after_cuts = refuse_after_cuts
        self.rate = rate
        self.lock = threading.Lock()
        self.forwarded = 0
        self.cut_count = 0
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.closed = False

    def say(self, line):
        with self.lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def serve(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pair = {"sockets": (client, upstream), "dead": False}
            self.say("CONNECTION")
            threading.Thread(target=self.pump, args=(client, upstream, pair, True), daemon=True).start()
            threading.Thread(target=self.pump, args=(upstream, client, pair, False), daemon=True).start()

    def reset(self, pair):
        if pair["dead"]:
            return
        pair["dead"] = True
        for sock in pair["sockets"]:
            try:
                # Linger 0: the close sends RST. Shutting reads down first wakes the other pump's recv on this
                # socket, so the kernel lets the socket go (and sends the RST) at once.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.shutdown(socket.SHUT_RD)
            except OSError:
                pass
            try:
                sock.close()
            except OSError:
                pass

    def pump(self, source, destination, pair, forward):
        started = time.monotonic()
        moved = 0
        try:
            while True:
                data = source.recv(CHUNK)
                if not data:
                    break
                if self.rate:
                    moved += len(data)
                    ahead = moved / self.rate - (time.monotonic() - started)
                    if ahead > 0:
                        time.sleep(ahead)
                cut_now = False
                if forward:
                    with self.lock:
                        limit = self.cuts[0] if self.cuts else None
                        if limit is not None and self.forwarded + len(data) >= limit:
                            data = data[: max(0, limit - self.forwarded)]
                            self.cuts.pop(0)
                            self.cut_count += 1
                            cut_now = True
                        self.forwarded += len(data)
                if data:
                    destination.sendall(data)
                if cut_now:
                    with self.lock:
                        total = self.forwarded
                        last = not self.cuts
                    refusing = last and self.refuse_after_cuts
                    if refusing:
                        # Stop listening before the reset: a peer that sees the reset reconnects at once, and
                        # the kernel would queue that connection on a listener still open (a busy machine let
                        # a "cut for good" link reconnect). shutdown() wakes the accept() blocked in the other
                        # thread; close() alone would not.
                        try:
                            self.listener.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                        self.listener.close()
                    self.reset(pair)
                    self.say("CUT %d %d" % (self.cut_count, total))
                    if refusing:
                        self.say("REFUSING")
                    return
        except OSError:
            pass
        finally:
            if not pair["dead"]:
                # An orderly end on one side ends the other side's writes too (half-close), as a real path would.
                try:
                    destination.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

    def finish(self, *_):
        with self.lock:
            total = self.forwarded
            if self.closed:
                return
            self.closed = True
        self.say("FORWARDED %d" % total)
        sys.stdout.flush()
        import os

        os._exit(0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", type=int, required=True)
    parser.add_argument("--cut-at", type=int, action="append", default=[])
    parser.add_argument("--refuse-after-cuts", action="store_true")
    parser.add_argument("--rate", type=float, default=0)
    args = parser.parse_args()
    relay = Relay(args.target, args.cut_at, args.refuse_after_cuts, args.rate)
    signal.signal(signal.SIGTERM, relay.finish)
    threading.Thread(target=relay.serve, daemon=True).start()
    relay.say("READY %d" % relay.port)

    def watch_stdin():
        # The test holds our stdin open; its end (the test process gone) ends the relay too.
        sys.stdin.read()
        relay.finish()

    threading.Thread(target=watch_stdin, daemon=True).start()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
