"""A TCP proxy that adds a fixed latency to every request, to make MinIO behave like a remote object store.

MinIO on the loopback answers a LIST or GET in well under a millisecond; S3 from a
cluster in the same region takes some 10 to 30 ms per request. The proxy forwards
bytes both ways and holds back the first chunk of each request (the first bytes a
client sends after the server has answered, on every connection) for ``delay``
seconds, so each HTTP request pays the latency once, however many connections a
reader keeps open. ``delay`` can change while it runs (0 while a table is written).

    proxy = LatencyProxy("127.0.0.1", minio_port)
    proxy.start()             # proxy.port is where clients connect
    proxy.delay = 0.020
"""

from __future__ import annotations

import asyncio
import threading


class LatencyProxy:
    def __init__(self, upstream_host: str, upstream_port: int, delay: float = 0.0) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.delay = delay
        self.port = 0
        self.requests = 0
        self.request_lines: list[str] | None = None  # a list to record each request's first line in
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="latency-proxy", daemon=True)

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the latency proxy did not start")

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._connection, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _connection(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.close()
            return
        answered = [True]  # the next bytes from the client start a new request

        async def requests() -> None:
            while data := await client_reader.read(65536):
                if answered[0]:
                    answered[0] = False
                    self.requests += 1
                    if self.request_lines is not None:
                        self.request_lines.append(data.split(b"\r\n", 1)[0].decode("latin-1"))
                    if self.delay:
                        await asyncio.sleep(self.delay)
                upstream_writer.write(data)
                await upstream_writer.drain()
            upstream_writer.close()

        async def responses() -> None:
            while data := await upstream_reader.read(65536):
                answered[0] = True
                client_writer.write(data)
                await client_writer.drain()
            client_writer.close()

        try:
            await asyncio.gather(requests(), responses())
        except (ConnectionError, OSError):
            pass
        finally:
            for writer in (client_writer, upstream_writer):
                writer.close()
