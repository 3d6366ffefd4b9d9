#!/usr/bin/env python3
"""Hostile-publisher soak of Nearby Messages; run through scripts/soak-messages.sh (inside the test network).

Processes (all `nearby`, from $SOAK_NEARBY):
  victim    `nearby service --medium wifi-lan --notify` (a fake notify-send on PATH records every call)
  hostile   a second `nearby service`, which this script drives over its socket to publish MESSAGES distinct large
            messages in waves of SOAK_WAVE, each wave unpublished once the victim's subscriber found it
  beacons   `nearby beacons --replay FLOOD` with 50,000 spoofed beacons from distinct addresses
Clients of the victim (this script): a subscriber, a watcher (`watch`), a lister (`list` every 2 s), and a poisoner
that sends bad lines on fresh connections (each gets an error or is closed; the others must not notice).

Checks: every client of the victim stays connected; every message of a wave is found by the subscriber and the
watcher and then lost; the victim's RSS peak and CPU per message, and the beacon subscriber's RSS peak, stay within
the limits; notify-send always gets `--` before the texts and the notification rate stays within 5 + 1/s.
"""
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

NEARBY = os.environ["SOAK_NEARBY"]
COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
WAVE = int(os.environ.get("SOAK_WAVE", "50"))
RSS_LIMIT_MB = float(os.environ.get("SOAK_RSS_LIMIT_MB", "200"))
CPU_LIMIT = float(os.environ.get("SOAK_CPU_LIMIT", "0.25"))
BEACON_RSS_LIMIT_MB = float(os.environ.get("SOAK_BEACON_RSS_LIMIT_MB", "80"))
SERVICE_ID = "soak-messages-%08x" % random.getrandbits(32)
TICKS = os.sysconf("SC_CLK_TCK")
violations = []
start = time.time()


def log(text):
    print("soak-messages: [%6.1f] %s" % (time.time() - start, text), flush=True)


def violation(text):
    violations.append(text)
    log("VIOLATION " + text)


def rss_mb(pid):
    try:
        with open("/proc/%d/status" % pid) as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def cpu_seconds(pid):
    try:
        with open("/proc/%d/stat" % pid) as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS
    except (OSError, IndexError):
        return None


class Client:
    """A JSON-line client of a service socket; a thread reads every line (events and responses)."""

    def __init__(self, path, name):
        self.name = name
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.lock = threading.Condition()
        self.responses = {}
        self.found = set()
        self.lost = set()
        self.events = 0
        self.closed = False
        self.next_id = 1
        self.max_line = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        pending = b""
        while True:
            try:
                chunk = self.sock.recv(1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                with self.lock:
                    self.closed = True
                    self.lock.notify_all()
                return
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                self.max_line = max(self.max_line, len(line))
                obj = json.loads(line)
                with self.lock:
                    if "event" in obj:
                        self.events += 1
                        if obj["event"] == "message_found":
                            self.found.add(obj["message_hex"])
                        elif obj["event"] == "message_lost":
                            self.lost.add(obj["message_hex"])
                    elif obj.get("id") is not None:
                        self.responses[obj["id"]] = obj
                    self.lock.notify_all()

    def request(self, obj, timeout=60):
        with self.lock:
            ident = self.next_id
            self.next_id += 1
        obj = dict(obj, id=ident)
        self.sock.sendall(json.dumps(obj).encode() + b"\n")
        deadline = time.time() + timeout
        with self.lock:
            while ident not in self.responses:
                if self.closed:
                    raise RuntimeError("%s: connection closed" % self.name)
                remaining = deadline - time.time()
                if remaining <= 0:
                    raise RuntimeError("%s: no response to %s" % (self.name, obj.get("op")))
                self.lock.wait(remaining)
            return self.responses.pop(ident)

    def wait(self, predicate, timeout):
        deadline = time.time() + timeout
        with self.lock:
            while not predicate(self):
                remaining = deadline - time.time()
                if remaining <= 0 or self.closed:
                    return False
                self.lock.wait(min(remaining, 1))
            return True

    def close(self):
        self.sock.close()


def start_service(name, work, extra_env=None, notify=False):
    socket_path = os.path.join(work, name + ".sock")
    arguments = [NEARBY, "service", "--socket", socket_path, "--state", os.path.join(work, name + ".json"),
                 "--medium", "wifi-lan", "--json"] + (["--notify"] if notify else [])
    env = dict(os.environ, **(extra_env or {}))
    stderr = open(os.path.join(work, name + ".err"), "w")
    process = subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=stderr, env=env, text=True)
    line = process.stdout.readline()
    if '"service_started"' not in line:
        raise RuntimeError("%s did not start: %r" % (name, line))
    threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
    return process, socket_path


def beacon_flood(path, count):
    """Eddystone-UID reports from `count` distinct random addresses."""
    with open(path, "w") as out:
        for index in range(count):
            address = "%02X:%02X:%02X:%02X:%02X:%02X" % tuple([0xC0 | random.getrandbits(6)] + [random.getrandbits(8) for _ in range(5)])
            frame = bytes([0x00, 0xEE]) + bytes([0x11] * 10) + index.to_bytes(6, "big") + bytes([0, 0])
            data = bytes([0x02, 0x01, 0x06, 0x03, 0x03, 0xAA, 0xFE, len(frame) + 3, 0x16, 0xAA, 0xFE]) + frame
            out.write("%s -60 %s\n" % (address, data.hex()))


POISON_LINES = [
    b"{not json",
    bytes(random.getrandbits(8) for _ in range(2000)).replace(b"\n", b" "),
    b'{"id":1,"op":"explode"}',
    b'{"id":2,"op":"publish"}',
    b'{"id":3,"op":"watch","handle":"sub-nope"}',
    b'{"id":4,"op":"publish","service_id":"x","content_hex":"zz"}',
    b"[" * 100000,
    b'{"id":5,"op":"subscribe","service_id":"' + b"s" * 1000 + b'"}',
    b"x" * (600 * 1024),  # over the 512 KiB request cap: the connection is closed
    b'{"id":6,"op":"publish","service_id":"x","content_hex":"' + b"00" * 102401 + b'"}',
]


def poisoner(path, stop, counts):
    while not stop.is_set():
        line = random.choice(POISON_LINES)
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(10)
            sock.connect(path)
            sock.sendall(line + b"\n")
            reply = sock.recv(65536)
            counts["answered" if reply else "closed"] += 1
        except OSError:
            counts["closed"] += 1
        finally:
            sock.close()
        time.sleep(0.05)


def main():
    work = tempfile.mkdtemp(prefix="nearby-soak-messages.")
    log("work directory %s, %d messages in waves of %d, service ID %s" % (work, COUNT, WAVE, SERVICE_ID))
    bin_dir = os.path.join(work, "bin")
    os.mkdir(bin_dir)
    calls = os.path.join(work, "notify-calls")
    with open(os.path.join(bin_dir, "notify-send"), "w") as script:
        script.write("#!/bin/sh\nprintf '%%s|' \"$@\" >> '%s'; echo >> '%s'; sleep 1\n" % (calls, calls))
    os.chmod(os.path.join(bin_dir, "notify-send"), 0o755)
    env = {"PATH": bin_dir + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
           "DBUS_SESSION_BUS_ADDRESS": "unix:path=%s/no-bus" % work}
    victim, victim_socket = start_service("victim", work, env, notify=True)
    hostile, hostile_socket = start_service("hostile", work)
    processes = [victim, hostile]
    try:
        baseline_rss = rss_mb(victim.pid)
        baseline_cpu = cpu_seconds(victim.pid)
        subscriber = Client(victim_socket, "subscriber")
        assert subscriber.request({"op": "subscribe", "service_id": SERVICE_ID})["ok"]
        watcher = Client(victim_socket, "watcher")
        assert watcher.request({"op": "watch"})["ok"]
        lister = Client(victim_socket, "lister")
        hostile_client = Client(hostile_socket, "hostile")
        stop = threading.Event()
        poison_counts = {"answered": 0, "closed": 0}
        threading.Thread(target=poisoner, args=(victim_socket, stop, poison_counts), daemon=True).start()

        def list_loop():
            while not stop.is_set():
                try:
                    lister.request({"op": "list"}, timeout=30)
                except RuntimeError as error:
                    violation(str(error))
                    return
                time.sleep(2)
        threading.Thread(target=list_loop, daemon=True).start()

        flood = os.path.join(work, "beacons.txt")
        beacon_flood(flood, 50000)
        beacons = subprocess.Popen([NEARBY, "beacons", "--replay", flood, "--json", "--lost-after", "2", "--timeout", "30"],
                                   stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "beacons.err"), "w"))
        processes.append(beacons)
        samples = {"victim": [], "beacons": []}

        def sampler():
            while not stop.is_set():
                for name, process in (("victim", victim), ("beacons", beacons)):
                    value = rss_mb(process.pid) if process.poll() is None else None
                    if value is not None:
                        samples[name].append(value)
                time.sleep(0.5)
        threading.Thread(target=sampler, daemon=True).start()

        published = 0
        not_found = 0
        not_lost = 0
        wave_number = 0
        while published < COUNT:
            wave_number += 1
            size = min(WAVE, COUNT - published)
            handles, contents = [], []
            for _ in range(size):
                if published % 4 == 0:
                    content = bytes([0x01] * 102400)
                    content = bytes([2 + published % 250, published // 250 % 256]) + content[2:]
                else:
                    content = os.urandom(random.randint(50 * 1024, 100 * 1024))
                published += 1
                response = hostile_client.request(
                    {"op": "publish", "service_id": SERVICE_ID, "content_hex": content.hex()})
                if not response["ok"]:
                    violation("the hostile publisher was refused: %s" % response)
                    continue
                handles.append(response["handle"])
                contents.append(content.hex())
            wanted = set(contents)
            if not subscriber.wait(lambda c: wanted <= c.found, 300):
                missing = len(wanted - subscriber.found)
                not_found += missing
                log("wave %d: %d of %d not found by the subscriber" % (wave_number, missing, len(wanted)))
            watcher.wait(lambda c: wanted <= c.found, 60)
            for handle in handles:
                hostile_client.request({"op": "unpublish", "handle": handle})
            if not subscriber.wait(lambda c: wanted <= c.lost | (wanted - c.found), 180):
                not_lost += len(wanted - subscriber.lost)
            log("wave %d done: %d published; victim RSS %.1f MB, CPU %.1f s; subscriber events %d, watcher %d, "
                "poison %s" % (wave_number, published, rss_mb(victim.pid) or -1, (cpu_seconds(victim.pid) or 0) - baseline_cpu,
                               subscriber.events, watcher.events, poison_counts))
            for client in (subscriber, watcher, lister):
                if client.closed:
                    violation("%s was disconnected by the victim" % client.name)
            if victim.poll() is not None:
                violation("the victim exited with %s" % victim.returncode)
                break
        time.sleep(3)
        stop.set()
        cpu = (cpu_seconds(victim.pid) or 0) - baseline_cpu
        peak = max(samples["victim"] or [0])
        final = rss_mb(victim.pid) or -1
        beacon_peak = max(samples["beacons"] or [0])
        beacons.wait(timeout=120)
        for client in (subscriber, watcher, lister):
            if client.closed:
                violation("%s was disconnected by the victim" % client.name)
        if peak > RSS_LIMIT_MB:
            violation("victim RSS peak %.1f MB over %.0f MB" % (peak, RSS_LIMIT_MB))
        if cpu / max(1, published) > CPU_LIMIT:
            violation("victim CPU %.3f s per message over %.3f" % (cpu / max(1, published), CPU_LIMIT))
        if beacon_peak > BEACON_RSS_LIMIT_MB:
            violation("beacon subscriber RSS peak %.1f MB over %.0f MB" % (beacon_peak, BEACON_RSS_LIMIT_MB))
        notify_lines = open(calls).read().splitlines() if os.path.exists(calls) else []
        for line in notify_lines:
            if not line.startswith("--app-name=nearby|--|"):
                violation("notify-send without -- first: %r" % line[:80])
                break
        elapsed = time.time() - start
        if len(notify_lines) > 5 + elapsed + 1:
            violation("%d notifications in %.0f s" % (len(notify_lines), elapsed))
        print("soak-messages: SUMMARY %d messages in %.0f s (%d waves); not found %d, not lost %d; victim RSS MB "
              "baseline/peak/final %.1f/%.1f/%.1f, CPU %.1f s (%.3f s per message); longest event line %d bytes; "
              "beacon subscriber RSS peak %.1f MB; notifications %d; poison lines answered %d, closed %d; "
              "clients disconnected %d; violations %d" % (
                  published, elapsed, wave_number, not_found, not_lost, baseline_rss or -1, peak, final, cpu,
                  cpu / max(1, published), max(subscriber.max_line, watcher.max_line), beacon_peak, len(notify_lines),
                  poison_counts["answered"], poison_counts["closed"],
                  sum(1 for c in (subscriber, watcher, lister) if c.closed), len(violations)), flush=True)
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
        if os.environ.get("SOAK_KEEP") != "1":
            shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if violations else 0)


if __name__ == "__main__":
    main()
