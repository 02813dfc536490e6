"""A request handler of a few lines for the real-server experiments.

Each request takes SLEEP_MS of waiting (a call to a database, say: the
worker is held, the CPU is not) and then WORK_MS of CPU time (the process's
own CPU clock, so a CPU quota on the worker stretches it in wall time, as
it would a real handler's), and answers {"key": ..., "zone": ...}.

QUEUE_TIMEOUT_MS (0: off, the defect) is a fix: a request whose
X-Request-Start (t=<unix microseconds>, set by the client or a proxy, as
Heroku's router and nginx do) is older than that is answered 503 at once,
without the work, since its client has probably given up on it already.
"""

import json
import os
import time

WORK_MS = float(os.environ.get("WORK_MS", "0"))
SLEEP_MS = float(os.environ.get("SLEEP_MS", "0"))
QUEUE_TIMEOUT_MS = float(os.environ.get("QUEUE_TIMEOUT_MS", "0"))
ZONE = os.environ.get("ZONE", "")


def waited_ms(environ):
    start = environ.get("HTTP_X_REQUEST_START", "")
    if not start.startswith("t="):
        return 0.0
    return time.time() * 1000.0 - int(start[2:]) / 1000.0


def app(environ, start_response):
    if QUEUE_TIMEOUT_MS > 0 and waited_ms(environ) > QUEUE_TIMEOUT_MS:
        start_response("503 Service Unavailable", [("Retry-After", "1")])
        return [b"queued too long\n"]
    key = environ.get("PATH_INFO", "/").rsplit("/", 1)[-1]
    if SLEEP_MS > 0:
        time.sleep(SLEEP_MS / 1000.0)
    until = time.process_time() + WORK_MS / 1000.0
    while time.process_time() < until:
        pass
    body = json.dumps({"key": key, "zone": ZONE}).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]
