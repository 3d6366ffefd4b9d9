#!/usr/bin/env python3
"""Fails when code calls out while it holds a lock (docs/ARCHITECTURE.md, "The lock rule").

Usage: scripts/check-lock-callouts.py [--list] [PATH ...]   (default: Sources Examples Benchmarks Fuzz)

A lock is held inside the body of a `withLock { ... }` closure and between `X.lock()` and the matching
`X.unlock()` (or `defer { X.unlock() }`, which holds it to the end of the enclosing block). Inside, these are
call-outs and are refused:

- resuming or finishing anything: `.resume(`, `.yield(`, `.finish(`, NIO promises (`.succeed(`, `.fail(`,
  `.completeWith(`), `.onTermination =` (runs the handler at once on a finished stream);
- cancelling a task or a group (`.cancel()`, `.cancelAll()`): cancellation runs handlers synchronously;
- creating a task: `Task {`, `Task(`, `Task.detached`, `.addTask`;
- logging: `logger.`, `log.`, `.trace(` … `.critical(`, `print(`;
- handlers, callbacks and delegates: a call of a name that ends in `handler`, `Handler`, `callback`, `Callback`
  or `Body`, a name `onXxx(` or `deliver(`/`notify(`, and a call of a `delegate`'s method.

Closures posted to a `LockedOutbox`'s outbox (`outbox.post { }`, run after the lock is released) and dispatch
blocks (`.async { }`) are not inspected: they do not run under the lock.

A line may say why a match is not a call-out with a trailing `// lock-ok: REASON` comment (the reason is
required); `--list` prints those too. Strings and comments are skipped. Exit status 1 when anything is refused.
"""

import os
import re
import sys

FORBIDDEN = [
    (re.compile(r"\.(resume|yield|finish)\s*\("), "resumes or finishes a continuation or stream"),
    (re.compile(r"\.(succeed|fail|completeWith|succeedWith)\s*\("), "completes a promise (runs its callbacks)"),
    (re.compile(r"\.onTermination\s*="), "sets onTermination (runs at once on a finished stream)"),
    (re.compile(r"\.(cancel|cancelAll)\s*\(\s*\)"), "cancels (runs cancellation handlers inline)"),
    (re.compile(r"(?<![\w.])Task\s*(\{|\(|\.detached)"), "creates a task"),
    (re.compile(r"\.addTask(UnlessCancelled)?\s*[({]"), "creates a child task"),
    (re.compile(r"(?<![\w.])(logger|log|self\.logger|self\.log)\s*(\??)\.\w+\s*\("), "logs"),
    (re.compile(r"\.(trace|debug|info|notice|warning|critical)\s*\("), "logs"),
    (re.compile(r"(?<![\w.])print\s*\("), "prints"),
    (re.compile(r"(?<![\w])(\w*([hH]andler|[cC]allback|Body))\s*(\?|!)?\s*\("), "calls a handler or callback"),
    (re.compile(r"(?<![\w])(on[A-Z]\w*|deliver|notify)\s*(\?|!)?\s*\("), "calls a handler or callback"),
    (re.compile(r"[dD]elegate\s*(\?|!)?\s*\.\s*\w+\s*\("), "calls a delegate"),
]

ALLOW = re.compile(r"//\s*lock-ok:\s*\S")


def strip_code(text):
    """Returns `text` with string literals and comments blanked out (newlines kept), so braces and names in them
    do not count. Handles nested block comments, multi-line strings, raw strings and interpolation."""
    out = []
    i = 0
    n = len(text)
    # Stack of contexts: ("code", depth) for interpolation code inside strings; strings are handled inline.
    interp = []  # each entry: [paren depth, string delimiter, hashes] to return to when depth hits 0

    def blank(s):
        return "".join("\n" if c == "\n" else " " for c in s)

    def scan_string(i):
        """Scans a string literal starting at i; returns the index after it, appending blanks and interpolated
        code (recursively stripped) to out."""
        hashes = 0
        j = i
        while j < n and text[j] == "#":
            hashes += 1
            j += 1
        multi = text.startswith('"""', j)
        delim = '"""' if multi else '"'
        out.append(blank(text[i:j + len(delim)]))
        j += len(delim)
        closing = delim + "#" * hashes
        escape = "\\" + "#" * hashes
        while j < n:
            if text.startswith(closing, j):
                out.append(blank(closing))
                return j + len(closing)
            if text.startswith(escape, j):
                k = j + len(escape)
                if k < n and text[k] == "(":
                    # Interpolation: strip the code inside, up to the matching parenthesis.
                    out.append(blank(text[j:k + 1]))
                    j = scan_code(k + 1, stop_at_paren=True)
                    continue
                out.append(blank(text[j:k + 1]))
                j = k + 1
                continue
            if not multi and text[j] == "\n":
                out.append("\n")
                return j + 1
            out.append("\n" if text[j] == "\n" else " ")
            j += 1
        return j

    def scan_code(i, stop_at_paren=False):
        depth = 0
        while i < n:
            c = text[i]
            if text.startswith("//", i):
                k = text.find("\n", i)
                k = n if k < 0 else k
                # Keep lock-ok markers visible to the checker.
                comment = text[i:k]
                out.append(comment if ALLOW.search(comment) else blank(comment))
                i = k
                continue
            if text.startswith("/*", i):
                level = 0
                k = i
                while k < n:
                    if text.startswith("/*", k):
                        level += 1
                        k += 2
                    elif text.startswith("*/", k):
                        level -= 1
                        k += 2
                        if level == 0:
                            break
                    else:
                        k += 1
                out.append(blank(text[i:k]))
                i = k
                continue
            if c == '"' or (c == "#" and re.match(r'#+"', text[i:i + 10])):
                i = scan_string(i)
                continue
            if stop_at_paren:
                if c == "(":
                    depth += 1
                elif c == ")":
                    if depth == 0:
                        out.append(" ")
                        return i + 1
                    depth -= 1
            out.append(c)
            i += 1
        return i

    scan_code(0)
    return "".join(out)


def matching_brace(code, open_index):
    depth = 0
    for k in range(open_index, len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(code) - 1


def enclosing_block_end(code, index):
    """The index of the `}` that closes the block containing `index`."""
    depth = 0
    for k in range(index, len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            if depth == 0:
                return k
            depth -= 1
    return len(code) - 1


def held_regions(code):
    """Yields (start, end) index ranges of `code` where a lock is held."""
    # `withLock { ... }` (trailing closure) and `withLock({ ... })`.
    for m in re.finditer(r"\bwithLock\s*(\(\s*)?\{", code):
        open_index = m.end() - 1
        yield open_index + 1, matching_brace(code, open_index)
    for m in re.finditer(r"(\b[\w.]+)\.lock\(\)", code):
        name = re.escape(m.group(1))
        rest = code[m.end():]
        deferred = re.match(r"\s*defer\s*\{\s*" + name + r"\.unlock\(\)\s*\}", rest)
        if deferred:
            yield m.end(), enclosing_block_end(code, m.end())
            continue
        unlock = re.search(name + r"\.unlock\(\)", rest)
        end = m.end() + unlock.start() if unlock else enclosing_block_end(code, m.end())
        yield m.end(), end


DEFERRED = re.compile(r"(\boutbox\.post|\.async|\.asyncAfter\([^)]*\))\s*(\(\s*)?\{")


def deferred_closures_blanked(body):
    """`body` with the closures that run later, after the lock is released, blanked out: those posted to a
    `LockedOutbox`'s outbox (`outbox.post { }`) and dispatch blocks (`.async { }`)."""
    chars = list(body)
    for m in DEFERRED.finditer(body):
        open_index = m.end() - 1
        close = matching_brace(body, open_index)
        for k in range(open_index + 1, close):
            if chars[k] != "\n":
                chars[k] = " "
    return "".join(chars)


def check_file(path, listing):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    code = strip_code(text)
    lines = text.split("\n")
    line_starts = [0]
    for line in code.split("\n"):
        line_starts.append(line_starts[-1] + len(line) + 1)

    def line_of(index):
        lo, hi = 0, len(line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if line_starts[mid] <= index:
                lo = mid
            else:
                hi = mid - 1
        return lo

    findings = []
    seen = set()
    for start, end in held_regions(code):
        body = deferred_closures_blanked(code[start:end])
        for pattern, why in FORBIDDEN:
            for m in pattern.finditer(body):
                line = line_of(start + m.start())
                key = (line, why)
                if key in seen:
                    continue
                seen.add(key)
                source = lines[line] if line < len(lines) else ""
                allowed = bool(ALLOW.search(source))
                findings.append((line + 1, why, source.strip(), allowed))
    refused = [f for f in findings if not f[3]]
    for line, why, source, allowed in sorted(findings):
        if allowed and not listing:
            continue
        tag = "allowed" if allowed else "REFUSED"
        print(f"{path}:{line}: {tag}: {why}: {source}")
    return len(refused)


def main(argv):
    listing = "--list" in argv
    roots = [a for a in argv if not a.startswith("--")] or ["Sources", "Examples", "Benchmarks", "Fuzz"]
    refused = 0
    files = 0
    for root in roots:
        if os.path.isfile(root):
            paths = [root]
        else:
            paths = []
            for dirpath, _, names in os.walk(root):
                paths += [os.path.join(dirpath, n) for n in names if n.endswith(".swift")]
        for path in sorted(paths):
            if "/Generated/" in path:
                continue
            files += 1
            refused += check_file(path, listing)
    if refused:
        print(f"check-lock-callouts: {refused} call-out(s) while a lock is held, in {files} files "
              "(see docs/ARCHITECTURE.md, 'The lock rule'; collect under the lock, act after it)")
        return 1
    print(f"check-lock-callouts: no call-out while a lock is held ({files} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
