"""Benchmark: POST /turns over HTTP against calling the manager directly, same run.

Measures turns per second and p50/p99 latency of a turn with ``ScriptedModel`` on a
file-backed SQLite store, with 1 and with 16 concurrent clients (each client its own session,
so the clients never wait for one another's turn lock):

- ``direct``: ``await manager.submit_turn(...)`` on one event loop, no HTTP;
- ``http``: a real ``agcore-lab serve`` process on 127.0.0.1 (engine on uvicorn's loop) and
  ``httpx.AsyncClient`` clients in this process;
- ``bridge``: the same server process but with ``create_app(..., engine_loop="bridge")``
  (the placement ``%agcore serve`` uses), to show what the bridge's thread hop costs;
- ``health``: ``GET /health`` on the same server — the floor of one HTTP round trip (httpx
  client, uvicorn, FastAPI) with no engine call, to split the HTTP cost from the turn's.

Targets (PASS/MISS), from what the floor allows: on this kind of machine one HTTP round trip
with no engine call (``health``: httpx client, uvicorn, FastAPI) takes about 0.7 ms, more than
twice a whole direct turn on ScriptedModel (~0.3 ms), so HTTP can never keep a third of the
direct throughput. The targets are therefore (1) HTTP keeps at least a fifth of the direct
throughput (``http / direct >= 0.20``) with 1 and with 16 clients, and (2) what the service
adds to a turn beyond that floor (``1/http - 1/health``) is at most 3 direct turns, with 1
client — our routing, auth, validation and JSON, not HTTP itself; and (3) the bridge placement
keeps at least 70% of the app placement's throughput with 16 clients.

Servers run in their own process, as in use: a uvicorn thread inside the clients' process
would share their GIL and measure that contention too.

Run: python bench/serve.py [--turns 300]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.serve import create_app

TOKEN = "bench-token"
AGENTS_MODULE = """
from agcore_lab import Agent, ScriptedModel
AGENTS = [Agent(name="bench", model=ScriptedModel())]
"""


def _agent() -> Agent:
    return Agent(name="bench", model=ScriptedModel())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _drive(
    clients: int, turns: int, one_turn: Callable[[int, int], Awaitable[None]]
) -> list[float]:
    """Run ``turns`` turns split over ``clients`` concurrent clients; return each latency."""
    latencies: list[float] = []

    async def client(number: int) -> None:
        for i in range(turns // clients):
            start = time.perf_counter()
            await one_turn(number, i)
            latencies.append(time.perf_counter() - start)

    await asyncio.gather(*(client(n) for n in range(clients)))
    return latencies


# The best run of each configuration: (requests per second, p50 ms, p99 ms).
BEST: dict[tuple[str, int], tuple[float, float, float]] = {}


def _figures(name: str, clients: int, wall: float, latencies: list[float]) -> float:
    ordered = sorted(latencies)
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    rate = len(latencies) / wall
    if (name, clients) not in BEST or rate > BEST[name, clients][0]:
        BEST[name, clients] = (rate, p50, p99)
    return rate


def _report() -> None:
    for (name, clients), (rate, p50, p99) in sorted(BEST.items(), key=lambda kv: kv[0][::-1]):
        print(
            f"  {name:<7} {clients:>2} clients: {rate:8.1f} req/s   "
            f"p50 {p50:6.2f} ms   p99 {p99:6.2f} ms"
        )


async def _direct(db: Path, clients: int, turns: int) -> float:
    manager = SessionManager(SqliteStore(db), agents=[_agent()])
    agent = manager.agents["bench"]
    sids = [await manager.create(agent) for _ in range(clients)]

    async def one_turn(number: int, i: int) -> None:
        await manager.submit_turn(sids[number], f"turn {i}")

    await _drive(clients, clients * 3, one_turn)  # warm up
    start = time.perf_counter()
    latencies = await _drive(clients, turns, one_turn)
    rate = _figures("direct", clients, time.perf_counter() - start, latencies)
    manager.store.close()
    return rate


async def _over_http(name: str, base_url: str, clients: int, turns: int) -> float:
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(
        base_url=base_url, headers=headers, limits=limits, timeout=60
    ) as http:
        sids = []
        for _ in range(clients):
            answer = await http.post("/sessions", json={"agent": "bench"})
            sids.append(answer.json()["session_id"])

        async def one_turn(number: int, i: int) -> None:
            answer = await http.post(f"/sessions/{sids[number]}/turns", json={"text": f"turn {i}"})
            answer.raise_for_status()

        await _drive(clients, clients * 3, one_turn)
        start = time.perf_counter()
        latencies = await _drive(clients, turns, one_turn)
        return _figures(name, clients, time.perf_counter() - start, latencies)


def _start_process(workdir: Path, placement: str) -> tuple[subprocess.Popen[bytes], str]:
    (workdir / "benchagents.py").write_text(AGENTS_MODULE)
    port = _free_port()
    script = shutil.which("agcore-lab")
    cli = [script] if script else [sys.executable, "-m", "agcore_lab"]
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    if placement == "app":  # the real command
        command = [*cli, "serve", "--store", "sqlite:///http.db", "--agents"]
        command += ["benchagents:AGENTS", "--port", str(port), "--token", TOKEN]
        command += ["--log-level", "warning"]
    else:
        command = [sys.executable, __file__, "--serve-bridge", str(port), "bridge.db"]
    process = subprocess.Popen(
        command, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("agcore-lab serve did not start")


def _serve_bridge(port: int, db: str) -> None:
    """The server process of the ``bridge`` figures (``--serve-bridge PORT DB``)."""
    import uvicorn

    manager = SessionManager(SqliteStore(db), agents=[_agent()])
    app = create_app(manager, token=TOKEN, engine_loop="bridge")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


async def _health(url: str, clients: int, turns: int) -> float:
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:

        async def one(number: int, i: int) -> None:
            (await http.get("/health")).raise_for_status()

        await _drive(clients, clients * 3, one)
        start = time.perf_counter()
        latencies = await _drive(clients, turns, one)
        return _figures("health", clients, time.perf_counter() - start, latencies)


def _verdict(label: str, ratio: float, target: float) -> bool:
    ok = ratio >= target
    print(f"  {label}: {ratio:.2f} (target >= {target:.2f}) {'PASS' if ok else 'MISS'}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=320, help="turns per configuration")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each; the best counts")
    parser.add_argument("--serve-bridge", nargs=2, metavar=("PORT", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bridge:
        _serve_bridge(int(args.serve_bridge[0]), args.serve_bridge[1])
        return
    turns = max(16, args.turns - args.turns % 16)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print(
            f"{turns} turns per configuration, best of {args.repeats} runs, ScriptedModel, "
            "file-backed SQLite"
        )
        for placement in ("app", "bridge"):
            process, url = _start_process(work, placement)
            try:
                for run in range(args.repeats):
                    for clients in (1, 16):
                        if placement == "app":
                            db = work / f"direct{clients}-{run}.db"
                            asyncio.run(_direct(db, clients, turns))
                            asyncio.run(_health(url, clients, turns))
                        name = "http" if placement == "app" else "bridge"
                        asyncio.run(_over_http(name, url, clients, turns))
            finally:
                process.terminate()
                process.wait(10)
    _report()
    rates = {key: figures[0] for key, figures in BEST.items()}
    print("ratios:")
    for clients in (1, 16):
        turn_ms = 1000 / rates["http", clients] - 1000 / rates["health", clients]
        print(
            f"  engine + JSON time of a turn over HTTP, {clients:>2} clients: {turn_ms:.2f} ms "
            f"(direct: {1000 / rates['direct', clients]:.2f} ms)"
        )
    added = 1 / rates["http", 1] - 1 / rates["health", 1]
    results = [
        _verdict("http / direct, 1 client      ", rates["http", 1] / rates["direct", 1], 0.20),
        _verdict("http / direct, 16 clients    ", rates["http", 16] / rates["direct", 16], 0.20),
        _verdict(
            "3 direct turns / added cost  ",
            (3 / rates["direct", 1]) / added if added > 0 else 9,
            1.0,
        ),
        _verdict("bridge / app, 16 clients     ", rates["bridge", 16] / rates["http", 16], 0.70),
    ]
    print("PASS" if all(results) else "MISS")


if __name__ == "__main__":
    main()
