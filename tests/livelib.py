# SPDX-License-Identifier: MIT
"""What the live tests (tests/integration/*.py) and the bench scripts (bench/*.py) do with a real
memstrackd and loadgen: start memstrackd on a socket of their own and wait until it answers, call a
method on a fresh connection, drive loadgen --commands, wait for a condition with a bound. Import it
with sys.path.insert(0, the tests folder) before "import livelib".

Waits are bounds against hanging, never measurements: nothing here asserts how fast anything is."""

import json
import os
import socket
import subprocess
import sys
import time

WAIT = 120      # seconds any one condition may take: a bound, not a measurement


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


class VarlinkError(RuntimeError):
    """An error reply: its name and parameters."""

    def __init__(self, name, parameters):
        super().__init__(f"{name} {json.dumps(parameters)}")
        self.name = name
        self.parameters = parameters


def call(sock_path, method, parameters=None, timeout=WAIT):
    """One varlink call on a fresh connection; returns the reply's parameters. VarlinkError for an
    error reply, ConnectionError when memstrackd closes the connection first (timeout None: no bound)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(sock_path)
        s.sendall(json.dumps({"method": method, "parameters": parameters or {}}).encode() + b"\0")
        data = b""
        while not data.endswith(b"\0"):
            chunk = s.recv(1 << 20)
            if not chunk:
                raise ConnectionError("memstrackd closed the connection")
            data += chunk
    reply = json.loads(data[:-1])
    if "error" in reply:
        raise VarlinkError(reply["error"], reply.get("parameters", {}))
    return reply["parameters"]


def call_paced(sock_path, method, parameters=None):
    """call(), waiting out memstrackd's pacing of a dear method (LimitExceeded "leaksPace": Leaks asked for
    again before its share of the daemon's time allows), within WAIT seconds."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            return call(sock_path, method, parameters)
        except VarlinkError as e:
            if (e.name != "io.memstrack.LimitExceeded" or e.parameters.get("limit") != "leaksPace"
                    or time.monotonic() > deadline):
                raise
            time.sleep(e.parameters.get("value", 0) / 1e6 + 0.001)


def wait_for(what, condition, timeout=WAIT):
    """condition()'s first true value, polled; fails the test after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    fail(f"timed out waiting for {what}")


class DaemonExited(Exception):
    """memstrackd ended before it answered; the caller has its output."""

    def __init__(self, returncode):
        super().__init__(f"memstrackd exited with {returncode}")
        self.returncode = returncode


def kill_children(children, work=None):
    """At a test's end, pass or fail: kills what it started that still runs and removes its work folder."""
    for p in children:
        if p.poll() is None:
            p.kill()
            p.wait()
    if work:
        subprocess.run(["rm", "-rf", work])


def process_cpu_seconds(pid):
    """User + system CPU time of a process so far, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_rss_bytes(pid):
    """A process's resident set now, from /proc/PID/status (0 once it is gone)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def start_memstrackd(exe, sock, *args, stdout=None, stderr=None, timeout=WAIT):
    """Starts exe --foreground --socket sock ARGS and waits until Status answers: (Popen, Status).
    DaemonExited if it ends first; TimeoutError after timeout seconds, the daemon then killed."""
    proc = subprocess.Popen([exe, "--foreground", "--socket", sock, *args], stdout=stdout, stderr=stderr)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise DaemonExited(proc.returncode)
            try:
                return proc, call(sock, "io.memstrack.Status")
            except (FileNotFoundError, ConnectionRefusedError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"no answer on {sock} within {timeout} s")
            time.sleep(0.05)
    except BaseException:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        raise


class Loadgen:
    """loadgen --commands: one command line in, one answer line out, so the test decides when."""

    def __init__(self, exe, pages, *extra, children=None):
        """children: a list the process joins at once, for the caller's cleanup."""
        self.proc = subprocess.Popen([exe, "--pages", str(pages), "--commands", *extra],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        if children is not None:
            children.append(self.proc)
        self.holder = None
        self.pid = int(self.expect("pid="))

    def expect(self, prefix):
        line = self.proc.stdout.readline().strip()
        # --memfd: the process holding the second reference announces itself when the memfd is made.
        if line.startswith("holder="):
            self.holder = int(line[len("holder="):])
            line = self.proc.stdout.readline().strip()
        if not line.startswith(prefix):
            fail(f"loadgen said {line!r}, expected {prefix!r}")
        return line[len(prefix):]

    def do(self, command, answer):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        self.expect(answer)

    def exit(self):
        self.do("exit", "bye")
        self.proc.wait(WAIT)
