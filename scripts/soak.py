#!/usr/bin/env python3
"""Fault soak driver (run by scripts/soak.sh inside the test network; Python stdlib only).

COUNT transfers of a random file (random size and content, known SHA-256) from a `nearby send` in the peer
namespace to a `nearby advertise` over the veth pair, each with one fault drawn from a shuffled deck:

  none             no fault: both sides must report success and the file must arrive intact
  sender_kill      SIGKILL the sender at a random point
  receiver_kill    SIGKILL the receiver (the victim advertiser, restarted afterwards) at a random point
  sender_stop      SIGSTOP the sender for keep-alive timeout + STOP_MARGIN, then SIGCONT
  receiver_stop    SIGSTOP the long-lived advertiser the same way
  sender_cancel    SIGUSR1 to the sender (cancels its payloads in flight)
  receiver_cancel  SIGUSR1 to the long-lived advertiser
  link_cut         the veth taken down for keep-alive timeout + STOP_MARGIN, then up again
  disk_full        the receive tmpfs filled at a random point so that at most 256 kB stay free

After each transfer it checks: every file under a final name in the receive directories has the SHA-256 of the
file sent (so no corrupt and no partial file under a final name), no `.partial` file is left by a receiver that
is alive, the survivor reported the failure (the sender exits non-zero; the advertiser prints a failure or
canceled transfer update for a payload it had started, and `disconnected` for the endpoint), within the
keep-alive timeout plus DETECT_SLACK seconds where the fault is a silent peer (stop, link cut), and that the
long-lived advertiser keeps a flat fd count and RSS. Exit status 1 on any violation.

Both sides run with `--reconnect-window 0`: the soak checks how faults end a connection; riding out a cut link
(auto-reconnect and resume, docs/LINK-SAFETY.md) is tested by LinkSafetyTests.
"""

import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

SERVICE_ID = "com.example.soak"
KEEP_ALIVE_INTERVAL_MS = 500
KEEP_ALIVE_TIMEOUT_MS = 2000
STOP_MARGIN = 4.5  # a stop or link cut lasts keep-alive timeout + this
DETECT_SLACK = 3.0  # a silent peer must be reported within keep-alive timeout + this (< STOP_MARGIN)
TRANSFER_TIMEOUT = 60.0  # a sender still running after this is a hang
SETTLE_TIMEOUT = 10.0  # the advertiser must report the end of a connection within this after the sender ended
FD_SLACK = 4  # fds the long-lived advertiser may hold above its warm-up count once a transfer is over
RSS_FACTOR, RSS_EXTRA_KB = 2.0, 20 * 1024  # RSS bound: 2 x warm-up RSS + 20 MB
WARMUP_TRANSFERS = 3  # the baseline is taken after this many transfers through the long-lived advertiser
MIN_SIZE, MAX_SIZE = 100_000, 20_000_000

WEIGHTS = {
    "none": 3,
    "sender_kill": 2,
    "receiver_kill": 1,
    "sender_stop": 1,
    "receiver_stop": 1,
    "sender_cancel": 1,
    "receiver_cancel": 1,
    "link_cut": 1,
    "disk_full": 1,
}
SILENT_FAULTS = {"sender_stop", "receiver_stop", "link_cut"}


def now():
    return time.monotonic()


T0 = now()  # log lines carry seconds since the start of the soak


class Proc:
    """A `nearby` process whose JSON lines are collected (with arrival times) by a reader thread."""

    def __init__(self, name, argv, cwd, log_dir):
        self.name = name
        self.events = []
        self.cond = threading.Condition()
        self.stderr_path = os.path.join(log_dir, f"{name}.err")
        self.stdout_log = open(os.path.join(log_dir, f"{name}.jsonl"), "a")
        self.stderr = open(self.stderr_path, "a")
        self.started = now()
        self.popen = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=self.stderr,
                                      stdin=subprocess.DEVNULL, text=True, bufsize=1)
        self.pid = self.popen.pid
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.popen.stdout:
            self.stdout_log.write(f"{now() - T0:9.3f} {line}")
            self.stdout_log.flush()
            try:
                event = json.loads(line)
            except ValueError:
                event = {"event": "unparsable", "line": line.rstrip()}
            event["_t"] = now()
            with self.cond:
                self.events.append(event)
                self.cond.notify_all()
        self.popen.wait()
        with self.cond:
            self.exit_time = now()  # within a few ms of the exit: stdout closes when the process ends
            self.cond.notify_all()

    exit_time = None

    def wait_event(self, predicate, timeout, start=0):
        """The first event at index >= start matching predicate, or None after timeout (or once the process's
        output ended)."""
        deadline = now() + timeout
        with self.cond:
            index = start
            while True:
                while index < len(self.events):
                    if predicate(self.events[index]):
                        return self.events[index]
                    index += 1
                remaining = deadline - now()
                if remaining <= 0 or (not self.reader.is_alive() and index >= len(self.events)):
                    return None
                self.cond.wait(min(remaining, 0.05))

    def snapshot(self, start=0):
        with self.cond:
            return list(self.events[start:])

    def count(self):
        with self.cond:
            return len(self.events)

    def alive(self):
        return self.popen.poll() is None

    def signal(self, number):
        if self.alive():
            try:
                os.kill(self.pid, number)
            except ProcessLookupError:
                pass

    def wait_exit(self, timeout):
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGKILL)
        self.popen.wait()
        self.reader.join(timeout=2)

    def stderr_tail(self):
        try:
            with open(self.stderr_path) as f:
                lines = [line.strip() for line in f.readlines() if line.strip()]
            return lines[-1] if lines else ""
        except OSError:
            return ""


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class Advertiser:
    """`nearby advertise` on a fixed port with its receive directory on a tmpfs."""

    def __init__(self, soak, name, port, receive_dir):
        self.soak, self.name, self.port, self.receive_dir = soak, name, port, receive_dir
        self.proc = None
        self.lives = 0

    def start(self):
        self.lives += 1
        argv = [self.soak.nearby, "advertise", "--service-id", SERVICE_ID, "--name", self.name, "--accept",
                "--receive-dir", self.receive_dir, "--port", str(self.port), "--medium", "wifi-lan", "--json",
                "--reconnect-window", "0",
                "--keep-alive-interval-ms", str(KEEP_ALIVE_INTERVAL_MS),
                "--keep-alive-timeout-ms", str(KEEP_ALIVE_TIMEOUT_MS)] + VERBOSE
        self.proc = Proc(f"advertiser-{self.name}", argv, self.soak.work, self.soak.work)
        if self.proc.wait_event(lambda e: e.get("event") == "advertising", 30) is None:
            raise SystemExit(f"soak: advertiser {self.name} did not start: {self.proc.stderr_tail()}")

    def stop(self):
        if self.proc:
            self.proc.kill()


class Soak:
    def __init__(self, count, nearby, work, peer_netns, link, seed):
        self.count, self.nearby, self.work, self.peer_netns, self.link = count, nearby, work, peer_netns, link
        self.rng = random.Random(seed)
        self.seed = seed
        self.violations = []
        self.counts = {kind: 0 for kind in WEIGHTS}
        self.missed = 0  # faults that landed after the transfer had completed
        self.failed_transfers = 0  # transfers that did not deliver the file (expected for most faults)
        self.samples = []  # (transfer index, fds, rss kB) of the long-lived advertiser
        self.baseline = None  # (fds, rss) after warm-up
        self.throughput = 30e6  # bytes/s estimate, refined from fault-free transfers
        self.src_dir = os.path.join(work, "src")
        os.makedirs(self.src_dir, exist_ok=True)
        self.sender_cwd = os.path.join(work, "sender")
        os.makedirs(self.sender_cwd, exist_ok=True)
        self.logs = os.path.join(work, "senders")  # sender-N.jsonl / sender-N.err of transfer N
        os.makedirs(self.logs, exist_ok=True)
        self.main = Advertiser(self, "soak-main", 47001, os.path.join(work, "inbox-main"))
        self.victim = Advertiser(self, "soak-victim", 47002, os.path.join(work, "inbox-victim"))
        self.transfers_through_main = 0

    # --- helpers ------------------------------------------------------------------------------------------

    def violation(self, index, kind, text):
        line = f"#{index} {kind} (+{now() - T0:.1f} s): {text}"
        self.violations.append(line)
        print(f"soak: VIOLATION {line}", flush=True)

    def deck(self):
        weights = WEIGHTS
        only = [k for k in os.environ.get("SOAK_FAULTS", "").split(",") if k]
        if only:
            weights = {k: WEIGHTS[k] for k in only}
        total = sum(weights.values())
        cards = []
        for kind, weight in weights.items():
            cards += [kind] * max(1 if self.count >= len(weights) else 0, round(self.count * weight / total))
        while len(cards) < self.count:
            cards.append(next(iter(weights)))
        self.rng.shuffle(cards)
        return cards[: self.count]

    def make_file(self, index):
        size = self.rng.randint(MIN_SIZE, MAX_SIZE)
        path = os.path.join(self.src_dir, f"soak-{index}.bin")
        digest = hashlib.sha256()
        with open(path, "wb") as f:
            left = size
            while left > 0:
                chunk = os.urandom(min(left, 1 << 20))
                digest.update(chunk)
                f.write(chunk)
                left -= len(chunk)
        return path, size, digest.hexdigest()

    def start_sender(self, index, path, port):
        argv = ["ip", "netns", "exec", self.peer_netns, self.nearby, "send", "--service-id", SERVICE_ID,
                "--address", f"10.77.0.1:{port}", "--name", f"soak-sender-{index}", "--accept", "--file", path,
                "--medium", "wifi-lan", "--json", "--timeout", "30", "--reconnect-window", "0",
                "--keep-alive-interval-ms", str(KEEP_ALIVE_INTERVAL_MS),
                "--keep-alive-timeout-ms", str(KEEP_ALIVE_TIMEOUT_MS)] + VERBOSE
        return Proc(f"sender-{index}", argv, self.sender_cwd, self.logs)

    def fill(self, path, leave):
        """Fills the file system of `path` (a tmpfs) until `leave` bytes stay free."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            free = self.free_bytes(os.path.dirname(path))
            if free > leave:
                os.posix_fallocate(fd, 0, free - leave)
        except OSError:
            pass  # the receiver raced us to the last blocks: the disk is full either way
        finally:
            os.close(fd)

    def log_fault(self, index, fault, point):
        with open(os.path.join(self.work, "faults.log"), "a") as f:
            f.write(f"{now() - T0:9.3f} #{index} {fault} at {point}\n")

    def free_bytes(self, directory):
        st = os.statvfs(directory)
        return st.f_bavail * st.f_frsize

    def wait_trigger(self, sender, size, setup_allowed=True):
        """Waits for a random point of the transfer: a fraction of the bytes (seen in the sender's progress) or of
        the expected duration after `connected`, whichever comes first; 10% of the time a point during the
        connection set-up instead. Returns a description, or None when the transfer ended first."""
        if setup_allowed and self.rng.random() < 0.1:
            delay = self.rng.uniform(0.05, 0.8)
            end = sender.wait_event(lambda e: e.get("event") in ("payload_sent", "connected"), delay)
            if end is not None and end.get("event") == "payload_sent":
                return None
            return f"set-up+{delay:.2f}s" if end is None else "at connected"
        fraction = self.rng.random()
        connected = sender.wait_event(lambda e: e.get("event") == "connected", 30)
        if connected is None:
            return None if not sender.alive() else "before connected (30 s)"
        deadline_time = connected["_t"] + fraction * size / self.throughput

        def reached(event):
            if event.get("event") == "payload_sent":
                return True
            return event.get("event") == "transfer_update" and event.get("bytes", 0) >= fraction * size
        hit = sender.wait_event(reached, max(0.0, deadline_time - now()))
        if hit is not None and hit.get("event") == "payload_sent":
            return None
        if not sender.alive():
            return None
        return f"{fraction:.0%}"

    # --- one transfer -------------------------------------------------------------------------------------

    def transfer(self, index, fault):
        self.counts[fault] += 1
        path, size, sha = self.make_file(index)
        target = self.victim if fault == "receiver_kill" else self.main
        adv = target.proc
        adv_start = adv.count()
        filler = os.path.join(target.receive_dir, "soak-filler") if fault == "disk_full" else None
        t0 = now()
        sender = self.start_sender(index, path, target.port)
        point = "-"
        fault_time = None
        silent_window = None  # (start, end) of a stop or link cut
        if fault != "none":
            # SIGUSR1 before `nearby` installed its handler would just terminate it: cancels wait for `connected`.
            point = self.wait_trigger(sender, size, setup_allowed=not fault.endswith("_cancel"))
            if point is None:
                self.missed += 1
                point = "missed (transfer over)"
            else:
                fault_time = now()
                self.log_fault(index, fault, point)
                if fault == "sender_kill":
                    sender.signal(signal.SIGKILL)
                elif fault == "receiver_kill":
                    adv.signal(signal.SIGKILL)
                elif fault == "sender_cancel":
                    sender.signal(signal.SIGUSR1)
                elif fault == "receiver_cancel":
                    adv.signal(signal.SIGUSR1)
                elif fault == "disk_full":
                    self.fill(filler, self.rng.randint(0, 256 * 1024))
                else:
                    victim_proc = {"sender_stop": sender, "receiver_stop": adv}.get(fault)
                    if victim_proc:
                        victim_proc.signal(signal.SIGSTOP)
                    else:
                        subprocess.run(["ip", "link", "set", self.link, "down"], check=True)
                    duration = KEEP_ALIVE_TIMEOUT_MS / 1000 + STOP_MARGIN
                    time.sleep(duration)
                    if victim_proc:
                        victim_proc.signal(signal.SIGCONT)
                    else:
                        subprocess.run(["ip", "link", "set", self.link, "up"], check=True)
                    silent_window = (fault_time, now())
        rc = sender.wait_exit(max(1.0, TRANSFER_TIMEOUT - (now() - t0)))
        if rc is None:
            self.violation(index, fault, f"sender still running after {TRANSFER_TIMEOUT:.0f} s (hang); killed")
            sender.kill()
            rc = "hang"
        sender.reader.join(timeout=2)
        sender_end = sender.exit_time or now()
        # When the sender first reported a failure: an error on the connection, a failed payload, or its exit.
        report = sender.wait_event(lambda e: (e.get("event") == "disconnected" and e.get("error"))
                                   or e.get("status") in ("failure", "canceled"), 0)
        sender_report = min(sender_end, report["_t"]) if report else sender_end
        sent = sender.wait_event(lambda e: e.get("event") == "payload_sent", 0)
        if fault == "receiver_kill" and fault_time is not None:
            target.proc.wait_exit(5)
        self.check(index, fault, point, target, adv, adv_start, sender, rc, sent, sha, size, fault_time,
                   silent_window, sender_report, t0)
        if filler and os.path.exists(filler):
            os.unlink(filler)
        if fault == "receiver_kill" or not target.proc.alive():
            if fault != "receiver_kill":
                self.violation(index, fault, f"advertiser {target.name} died (rc {target.proc.popen.poll()}): "
                               f"{target.proc.stderr_tail()}")
            target.stop()
            self.restart_checks(index, fault, target)
        os.unlink(path)
        if target is self.main:
            self.transfers_through_main += 1
        self.sample(index, fault)

    def check(self, index, fault, point, target, adv, adv_start, sender, rc, sent, sha, size, fault_time,
              silent_window, sender_report, t0):
        adv_alive = adv.alive()
        # 1. The advertiser's view: which endpoint, which payload, how did it end.
        ended = None
        time.sleep(0.05)  # lets the reader threads take the last lines
        ids = {e.get("endpoint_id") for e in adv.snapshot(adv_start) if e.get("event") == "connection_initiated"}
        if adv_alive and ids:
            ended = adv.wait_event(lambda e: e.get("event") in ("disconnected", "rejected")
                                   and e.get("endpoint_id") in ids, SETTLE_TIMEOUT, adv_start)
            if ended is not None:
                # The connection's end comes first; the final status of each payload it had under way (after its
                # partial file was deleted) right after: wait for those before looking at the directory.
                started = {e.get("payload_id") for e in adv.snapshot(adv_start) if e.get("event") == "transfer_update"}
                for payload in started:
                    adv.wait_event(lambda e: e.get("payload_id") == payload and e.get("event") == "transfer_update"
                                   and e.get("status") != "in_progress", 2, adv_start)
        events = adv.snapshot(adv_start)
        initiated = [e for e in events if e.get("event") == "connection_initiated"]
        updates = [e for e in events if e.get("event") == "transfer_update"]
        finals = [e for e in updates if e.get("status") in ("success", "failure", "canceled")]
        received = [e for e in events if e.get("event") == "payload_received" and e.get("type") == "file"]
        delivered = any(e.get("sha256") == sha for e in received)
        for who, stream in (("advertiser", updates), ("sender", [e for e in sender.snapshot()
                                                               if e.get("event") == "transfer_update"])):
            closed = {}
            for e in stream:
                if e.get("status") != "in_progress":
                    closed[e.get("payload_id")] = e.get("status")
                elif e.get("payload_id") in closed:
                    self.violation(index, fault, f"{who} reported progress for payload {e.get('payload_id')} after "
                                   f"its final status {closed[e.get('payload_id')]}")
                    break
        if sent and sent.get("sha256") != sha:
            self.violation(index, fault, f"sender reported sha256 {sent.get('sha256')} for a file of {sha}")
        if received and not delivered:
            self.violation(index, fault, f"advertiser reported a file with sha256 {received[0].get('sha256')}, "
                           f"sent {sha}")

        # 2. Files in the receive directory: final names hold the whole file; no partial file is left behind
        #    by a receiver that is alive.
        for name in sorted(os.listdir(target.receive_dir)):
            full = os.path.join(target.receive_dir, name)
            if name == "soak-filler" or name == "lost+found":
                continue
            if os.path.isdir(full):
                self.violation(index, fault, f"unexpected directory {name} in the receive dir")
                shutil.rmtree(full)
                continue
            # A partial file, or the resume record beside one (link safety: a swift-nearby receiver keeps both for
            # the reconnect window).
            if re.fullmatch(r"\.nearby-.*\.partial(\.resume)?", name):
                if adv_alive:
                    self.violation(index, fault, f"partial file {name} left behind by a live receiver")
                    os.unlink(full)
                continue  # a killed receiver's partial: checked after its restart
            digest = sha256_file(full)
            if digest != sha:
                self.violation(index, fault, f"file {name} under a final name has sha256 {digest[:16]}… "
                               f"({os.path.getsize(full)} of {size} bytes): corrupt or partial")
            os.unlink(full)

        # 3. Outcome and who reported what.
        if fault == "none" or point.startswith("missed"):
            if rc != 0 or not sent:
                self.violation(index, fault, f"transfer without an effective fault failed: sender rc {rc}: "
                               f"{sender.stderr_tail()}")
            if target.proc.alive() and not delivered and fault != "disk_full":
                self.violation(index, fault, "transfer without an effective fault: the advertiser reported no file")
        if not delivered:
            self.failed_transfers += 1
        if fault == "none" and rc == 0 and delivered:
            connected = sender.wait_event(lambda e: e.get("event") == "connected", 0)
            if connected and sent:
                seconds = max(1e-3, sent["_t"] - connected["_t"])
                self.throughput = 0.7 * self.throughput + 0.3 * (size / seconds)

        # When the sender knew it was done: its `success` update (printed just before `payload_sent`).
        success = sender.wait_event(lambda e: e.get("event") == "payload_sent" or e.get("status") == "success", 0)
        done_at = success["_t"] if success and rc == 0 else None
        sender_survivor = fault in ("receiver_kill", "receiver_stop", "receiver_cancel", "link_cut", "disk_full")
        adv_survivor = fault in ("sender_kill", "sender_stop", "sender_cancel", "link_cut", "disk_full")
        if point.startswith("missed"):
            sender_survivor = adv_survivor = False
        if sender_survivor and not delivered and rc == 0:
            # The sender's success means every byte was handed to the transport (no end-to-end acknowledgement
            # in the protocol, as in Google's default): allowed when it got there before the fault could reach it.
            grace = {"receiver_kill": 0.5, "receiver_cancel": 0.5, "disk_full": 0.5}.get(
                fault, KEEP_ALIVE_TIMEOUT_MS / 1000 + DETECT_SLACK)
            if fault_time is not None and done_at is not None and done_at <= fault_time + grace:
                self.sender_first += 1
            else:
                self.violation(index, fault, "sender exited 0 long after the fault, but the file was not delivered")
        if sender_survivor and rc not in (0, "hang") and not sender.stderr_tail():
            self.violation(index, fault, f"sender exited {rc} without a reason on stderr")
        if adv_survivor and adv_alive and not delivered and initiated:
            if ended is None:
                self.violation(index, fault, f"advertiser never reported the end of the connection "
                               f"(no disconnected within {SETTLE_TIMEOUT:.0f} s of the sender's exit)")
            started = {e.get("payload_id") for e in updates}
            finished = {e.get("payload_id") for e in finals}
            for payload in started - finished:
                self.violation(index, fault, f"advertiser never reported a final status for payload {payload}")
            if any(e.get("status") == "success" for e in finals):
                self.violation(index, fault, "advertiser reported success without a file")
        # A sender that was stopped and dropped must say so once it runs again, unless it had handed every byte to
        # the transport before the stop.
        if fault == "sender_stop" and fault_time is not None and not delivered and rc == 0:
            # Its last write may have been under way when it was stopped (or, after SIGCONT, go into the socket
            # before it reads the peer's close): success right after the stop or right after the resume is that race.
            resumed = silent_window[1]
            if done_at is not None and (done_at <= fault_time + 0.5 or resumed <= done_at <= resumed + 0.5):
                self.sender_first += 1
            else:
                self.violation(index, fault, "sender exited 0 after it was stopped and dropped; file not delivered")
        # A silent peer (stopped, or behind a cut link) must be noticed while it is silent.
        if silent_window:
            limit = silent_window[0] + KEEP_ALIVE_TIMEOUT_MS / 1000 + DETECT_SLACK
            if fault in ("receiver_stop", "link_cut") and sender_report > limit and rc != "hang" \
                    and not point.startswith("set-up"):
                self.violation(index, fault, f"sender ran on {sender_report - silent_window[0]:.1f} s after its "
                               f"receiver fell silent (rc {rc}) without reporting a failure: it did not notice "
                               f"within keep-alive timeout + {DETECT_SLACK:.0f} s")
            if fault in ("sender_stop", "link_cut") and adv_alive and initiated:
                up = adv.wait_event(lambda e: e.get("event") == "disconnected" and e.get("endpoint_id") in ids
                                    and e["_t"] < silent_window[0], 0, adv_start) is None
                report = adv.wait_event(lambda e: e.get("event") == "disconnected" and e.get("endpoint_id") in ids,
                                        0, adv_start)
                if up and not point.startswith("set-up") and (report is None or report["_t"] > limit):
                    when = "never" if report is None else f"after {report['_t'] - silent_window[0]:.1f} s"
                    self.violation(index, fault, f"advertiser noticed the silent sender {when}")
        outcome = "delivered" if delivered else "not delivered"
        print(f"soak: #{index} {fault:<15} {size / 1e6:5.1f} MB  point {point:<22} sender rc {rc!s:<4} "
              f"{outcome:<13} {now() - t0:5.1f} s", flush=True)

    def restart_checks(self, index, fault, target):
        """Restarts a killed advertiser; its stale partial files must be gone once it is up again."""
        before = [n for n in os.listdir(target.receive_dir) if n.endswith(".partial")]
        target.start()
        names = os.listdir(target.receive_dir)
        # A partial file with a resume record is kept by the restarted receiver for the reconnect window (auto-resume
        # across a restart, docs/LINK-SAFETY.md): not stale. The soak does not resume it; remove both.
        resumable = [n for n in names if n.endswith(".partial") and n + ".resume" in names]
        for name in resumable:
            for leftover in (name, name + ".resume"):
                try:
                    os.unlink(os.path.join(target.receive_dir, leftover))
                except FileNotFoundError:
                    pass
        after = [n for n in names if n.endswith(".partial") and n not in resumable]
        if after:
            self.stale_partials += len(after)
            if STRICT_STALE:
                self.violation(index, fault, f"stale partial files after restart: {after}")
            for name in after:
                os.unlink(os.path.join(target.receive_dir, name))
        self.partials_after_kill += len(before)

    stale_partials = 0
    sender_first = 0  # sender exited 0 (all bytes handed to the transport) before the receiver's fault hit
    partials_after_kill = 0

    def sample(self, index, fault):
        """fds and RSS of the long-lived advertiser once the transfer is over (fds may take a moment to close)."""
        pid = self.main.proc.pid
        deadline = now() + 3
        fds = fd_count(pid)
        while self.baseline and fds is not None and fds > self.baseline[0] + FD_SLACK and now() < deadline:
            time.sleep(0.1)
            fds = fd_count(pid)
        rss = rss_kb(pid)
        if fds is None or rss is None:
            return
        self.samples.append((index, fds, rss))
        if self.baseline is None and self.transfers_through_main >= min(WARMUP_TRANSFERS, self.count):
            self.baseline = (fds, rss)
            print(f"soak: long-lived advertiser baseline after warm-up: {fds} fds, RSS {rss / 1024:.1f} MB",
                  flush=True)
        elif self.baseline:
            if fds > self.baseline[0] + FD_SLACK:
                self.violation(index, fault, f"long-lived advertiser holds {fds} fds, baseline "
                               f"{self.baseline[0]} + slack {FD_SLACK}")
            bound = RSS_FACTOR * self.baseline[1] + RSS_EXTRA_KB
            if rss > bound:
                self.violation(index, fault, f"long-lived advertiser RSS {rss / 1024:.1f} MB above "
                               f"{bound / 1024:.1f} MB")

    # --- run ----------------------------------------------------------------------------------------------

    def run(self):
        t_start = now()
        print(f"soak: {self.count} transfers, seed {self.seed}, keep-alive {KEEP_ALIVE_INTERVAL_MS}/"
              f"{KEEP_ALIVE_TIMEOUT_MS} ms", flush=True)
        self.main.start()
        self.victim.start()
        try:
            for index, fault in enumerate(self.deck(), start=1):
                self.transfer(index, fault)
        finally:
            self.main.stop()
            self.victim.stop()
        elapsed = now() - t_start
        kinds = " ".join(f"{kind}={n}" for kind, n in self.counts.items())
        if self.samples:
            fds = [s[1] for s in self.samples]
            rss = [s[2] / 1024 for s in self.samples]
            figures = (f"advertiser fds first/last/max {fds[0]}/{fds[-1]}/{max(fds)}; "
                       f"RSS MB first/last/max {rss[0]:.1f}/{rss[-1]:.1f}/{max(rss):.1f}")
        else:
            figures = "no advertiser samples"
        print(f"soak: SUMMARY {self.count} transfers in {elapsed:.0f} s; faults: {kinds}; missed faults "
              f"{self.missed}; sender finished first {self.sender_first}; not delivered {self.failed_transfers}; stale partials after restart "
              f"{self.stale_partials} (of {self.partials_after_kill} left by kills); violations "
              f"{len(self.violations)}; {figures}; main advertiser lives {self.main.lives}", flush=True)
        for line in self.violations:
            print(f"soak: violation {line}")
        return 1 if self.violations else 0


STRICT_STALE = os.environ.get("SOAK_STRICT_STALE", "1") == "1"
VERBOSE = ["--verbose"] if os.environ.get("SOAK_VERBOSE") == "1" else []


def main():
    count = int(sys.argv[1])
    nearby, work, peer_netns, link = sys.argv[2:6]
    seed = int(os.environ.get("SOAK_SEED") or random.SystemRandom().randrange(1 << 31))
    sys.exit(Soak(count, nearby, work, peer_netns, link, seed).run())


if __name__ == "__main__":
    main()
