#!/usr/bin/env python3
"""A small TCP proxy on loopback for the failover tests: what stands in front of a PostgreSQL
cluster in production (HAProxy, a virtual IP, a DNS name that moves), and can be told to move.

    python3 scripts/tcp-proxy.py serve --target HOST:PORT --ports-file FILE [--listen PORT]
        [--control PORT]
    python3 scripts/tcp-proxy.py control PORT COMMAND [ARGUMENT]

`serve` forwards every connection made to 127.0.0.1:LISTEN to the current target. LISTEN and
CONTROL default to free ports that the system picks; once it listens, it writes
`LISTEN CONTROL` to FILE (written whole, then renamed into place) and prints `ready`. It takes one command per connection to 127.0.0.1:CONTROL, a line each,
and answers `ok ...` or `error ...`:

    target HOST:PORT   new connections go to HOST:PORT; open ones stay where they are
    drop               closes every open connection, both sides (as a failover's switch does)
    blackhole on|off   on: forwards nothing more, in either direction, on open connections and
                       new ones, and closes none (packets dropped, no FIN, no RST: a partition);
                       what arrives meanwhile, a close included, is held until `off`, which
                       forwards it and then forwards again
    status             the target, the open connections, how many of them their client has not
                       closed, whether it black-holes

`control` sends one command and prints the answer; it exits 1 on `error`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys


class Proxy:
    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.connections: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        # The connections whose client has not ended its side (a client that closes during a
        # partition leaves its connection open towards the server until the heal).
        self.clients: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self.open = asyncio.Event()
        self.open.set()

    async def pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   ended=None) -> None:
        """Forwards what `reader` gets to `writer`. While the proxy black-holes, it goes on
        reading (so that it sees the end of the stream) but holds what it read, and the end of
        the stream too, until the partition heals, as a network that drops packets delivers
        nothing until TCP retransmits after the heal. `ended` is called when `reader` ends."""
        held: list[bytes] = []
        reading = None
        try:
            while True:
                if reading is None:
                    reading = asyncio.ensure_future(reader.read(65536))
                if held and not self.open.is_set():
                    opening = asyncio.ensure_future(self.open.wait())
                    await asyncio.wait({reading, opening}, return_when=asyncio.FIRST_COMPLETED)
                    opening.cancel()
                else:
                    await asyncio.wait({reading})
                if reading.done():
                    data = reading.result()
                    reading = None
                    if not data:
                        break
                    held.append(data)
                if held and self.open.is_set():
                    writer.write(b"".join(held))
                    held.clear()
                    await writer.drain()
            if ended is not None:
                ended()
            await self.open.wait()
            if held:
                writer.write(b"".join(held))
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            if reading is not None:
                reading.cancel()
            close(writer)

    async def accept(self, client_reader, client_writer) -> None:
        await self.open.wait()
        host, port = self.target
        try:
            server_reader, server_writer = await asyncio.open_connection(host, port)
        except OSError:
            close(client_writer)
            return
        pair = (client_writer, server_writer)
        self.connections.add(pair)
        self.clients.add(pair)
        try:
            await asyncio.gather(
                self.pipe(client_reader, server_writer, lambda: self.clients.discard(pair)),
                self.pipe(server_reader, client_writer))
        finally:
            self.connections.discard(pair)
            self.clients.discard(pair)

    def command(self, line: str) -> str:
        words = line.split()
        if not words:
            return "error empty command"
        if words[0] == "target" and len(words) == 2 and ":" in words[1]:
            host, port = words[1].rsplit(":", 1)
            self.target = (host, int(port))
            return f"ok target {host}:{port}"
        if words[0] == "drop" and len(words) == 1:
            dropped = len(self.connections)
            for client, server in list(self.connections):
                close(client)
                close(server)
            return f"ok dropped {dropped}"
        if words[0] == "blackhole" and len(words) == 2 and words[1] in ("on", "off"):
            if words[1] == "on":
                self.open.clear()
            else:
                self.open.set()
            return f"ok blackhole {words[1]}"
        if words[0] == "status" and len(words) == 1:
            host, port = self.target
            state = "off" if self.open.is_set() else "on"
            return (f"ok target {host}:{port} connections {len(self.connections)} "
                    f"clients {len(self.clients)} blackhole {state}")
        return f"error unknown command: {line.strip()}"

    async def control(self, reader, writer) -> None:
        line = (await reader.readline()).decode()
        writer.write((self.command(line) + "\n").encode())
        await writer.drain()
        close(writer)


def close(writer: asyncio.StreamWriter) -> None:
    try:
        writer.close()
    except (ConnectionError, OSError, RuntimeError):
        pass


async def serve(listen: int, target: tuple[str, int], control: int, ports_file: str) -> None:
    proxy = Proxy(target)
    server = await asyncio.start_server(proxy.accept, "127.0.0.1", listen)
    controller = await asyncio.start_server(proxy.control, "127.0.0.1", control)
    ports = f"{server.sockets[0].getsockname()[1]} {controller.sockets[0].getsockname()[1]}\n"
    with open(ports_file + ".new", "w") as file:
        file.write(ports)
    os.replace(ports_file + ".new", ports_file)
    print("ready", flush=True)
    async with server, controller:
        await asyncio.gather(server.serve_forever(), controller.serve_forever())


def send(port: int, command: str) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall((command + "\n").encode())
        answer = connection.makefile().readline().strip()
    print(answer)
    return 0 if answer.startswith("ok") else 1


def main() -> int:
    parser = argparse.ArgumentParser(description="A TCP proxy on loopback that can move.")
    commands = parser.add_subparsers(dest="command", required=True)
    serving = commands.add_parser("serve")
    serving.add_argument("--listen", type=int, default=0)
    serving.add_argument("--target", required=True)
    serving.add_argument("--control", type=int, default=0)
    serving.add_argument("--ports-file", required=True)
    controlling = commands.add_parser("control")
    controlling.add_argument("port", type=int)
    controlling.add_argument("words", nargs="+")
    arguments = parser.parse_args()
    if arguments.command == "control":
        return send(arguments.port, " ".join(arguments.words))
    host, port = arguments.target.rsplit(":", 1)
    try:
        asyncio.run(
            serve(arguments.listen, (host, int(port)), arguments.control, arguments.ports_file))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
